import canonicalize from 'canonicalize';

/**
 * RFC 8785 (JSON Canonicalization Scheme) serialization.
 * Object keys are sorted by UTF-16 code units, numbers use the ECMAScript form, no white space.
 * Throws on values JSON cannot represent (undefined, functions, non-finite numbers), so a caller
 * never hashes something other than what it thinks it hashes.
 */
export function canonicalJson(value: unknown): string {
  assertJsonValue(value, '');
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON representation');
  return text;
}

function assertJsonValue(value: unknown, path: string): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`non-finite number at ${path || '/'}`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertJsonValue(item, `${path}/${i}`));
    return;
  }
  if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) assertJsonValue(item, `${path}/${key}`);
    return;
  }
  throw new TypeError(`${typeof value} at ${path || '/'} has no JSON representation`);
}

/**
 * Whether `value` nests arrays and objects deeper than `maxDepth` (a scalar has depth 0). Iterative, so
 * it is safe on any input, before anything recursive (serializers, hashing) touches it.
 */
export function nestsDeeperThan(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    if (depth + 1 > maxDepth) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}
