import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import { CONTENT_HASH_PATTERN } from './field-rules.ts';

const SHA256_PREFIX = 'sha256:';
const CONTENT_HASH = new RegExp(CONTENT_HASH_PATTERN);

/** One call (`crypto.hash`): 0.4–0.7 µs for a short input, against 1.4–2.1 µs through a Hash object. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

export function isContentHash(value: string): boolean {
  return CONTENT_HASH.test(value);
}

/**
 * `sha256:ABC…` and `sha256:abc…` name the same hash; the lowercase form is the stored one (docs/api.md,
 * "Proofs").
 */
export function normalizeContentHash(value: string): string {
  if (!isContentHash(value)) throw new TypeError('not a sha256:<64 hex> content hash');
  return value.toLowerCase();
}

/** `sha256:` + hex SHA-256 of the JCS form of `metadata`; absent metadata hashes as `{}` (docs/api.md). */
export function metadataHash(metadata: Record<string, unknown> | undefined): string {
  return SHA256_PREFIX + sha256Hex(canonicalJson(metadata ?? {}));
}

/** The sorted top-level key names: the only part of the metadata a proof publishes. */
export function metadataKeys(metadata: Record<string, unknown> | undefined): string[] {
  return Object.keys(metadata ?? {}).sort();
}
