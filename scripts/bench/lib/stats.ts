/** Nearest-rank percentile `p` (0 to 100) of sorted values; NaN for none. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/**
 * The sorted value at index ⌊q × count⌋ (the last one at most), for a fraction `q` from 0 to 1: of an
 * even count, the median is the upper middle one. Undefined for none.
 */
export function valueAt(sorted: number[], q: number): number | undefined {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
