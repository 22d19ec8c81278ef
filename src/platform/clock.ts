/** The time source; tests pass a fixed or stepping clock. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** An epoch-milliseconds time as it appears in JSON: ISO 8601 UTC with milliseconds. */
export function isoTime(ms: number): string {
  return new Date(Number(ms)).toISOString();
}

export function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}
