import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` uniformly random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

/**
 * An API key: `hp_` + 43 base62 characters (≈ 256 bits); only its SHA-256 is ever stored (docs/webhooks.md,
 * "API keys").
 */
export function generateApiKey(): { raw: string; prefix: string; hash: string } {
  const raw = 'hp_' + randomBase62(43);
  return { raw, prefix: raw.slice(0, 11), hash: hashApiKey(raw) };
}

export function hashApiKey(raw: string): string {
  return createHash('sha256').update(raw, 'utf8').digest('hex');
}

export function looksLikeApiKey(value: string): boolean {
  return /^hp_[0-9A-Za-z]{43}$/.test(value);
}

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return 'whsec_' + randomBytes(32).toString('base64');
}

/** Compares two secrets in constant time, whatever their lengths (both are hashed first). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}
