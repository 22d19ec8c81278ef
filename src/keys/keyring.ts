import { createHash, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One HMAC signing key. The secret never leaves the process: not in a response, log or event. */
export interface HmacKey {
  keyId: string;
  secret: Buffer;
  /** The same secret as a KeyObject, imported once for fast signing. */
  keyObject: KeyObject;
  createdAt: string;
}

interface StoredHmacKey {
  keyId: string;
  algorithm: 'hmac-sha256';
  secret: string;
  createdAt: string;
}

/**
 * The service's signing keys, persisted in a directory so proofs verify after a restart.
 * The newest key signs; every key ever created still verifies (rotation adds a key, never removes one).
 * Several instances may share the directory: a key id this process has not seen makes it read the
 * directory again before it gives up.
 */
export class Keyring {
  readonly #dir: string;
  #keys = new Map<string, HmacKey>();
  #active: HmacKey;

  private constructor(dir: string, keys: HmacKey[]) {
    this.#dir = dir;
    for (const key of keys) this.#keys.set(key.keyId, key);
    this.#active = newest(keys);
  }

  /** Loads every key in `dir`, creating the directory and a first key when there is none. */
  static open(dir: string): Keyring {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const keys = readKeys(dir);
    if (keys.length === 0) keys.push(writeNewKey(dir, new Date()));
    return new Keyring(dir, keys);
  }

  get active(): HmacKey {
    return this.#active;
  }

  /** The key with this id, or undefined when no instance sharing the directory ever made it. */
  find(keyId: string): HmacKey | undefined {
    const known = this.#keys.get(keyId);
    if (known !== undefined) return known;
    for (const key of readKeys(this.#dir)) this.#keys.set(key.keyId, key);
    return this.#keys.get(keyId);
  }

  /** Adds a new key that signs from now on; older keys keep verifying what they signed. */
  rotate(now: Date = new Date()): HmacKey {
    const key = writeNewKey(this.#dir, now);
    this.#keys.set(key.keyId, key);
    this.#active = key;
    return key;
  }

  list(): HmacKey[] {
    return [...this.#keys.values()];
  }
}

function newest(keys: HmacKey[]): HmacKey {
  const sorted = [...keys].sort(
    (a, b) => a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId),
  );
  const last = sorted.at(-1);
  if (last === undefined) throw new Error('keyring is empty');
  return last;
}

function readKeys(dir: string): HmacKey[] {
  const keys: HmacKey[] = [];
  for (const name of readdirSync(dir)) {
    if (!/^hmac-[0-9a-f]{16}\.json$/.test(name)) continue;
    const stored = JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as StoredHmacKey;
    const secret = Buffer.from(stored.secret, 'base64');
    if (stored.algorithm !== 'hmac-sha256' || secret.length < 32 || stored.keyId !== hmacKeyId(secret)) {
      throw new Error(`signing key file ${path.join(dir, name)} is malformed`);
    }
    keys.push({
      keyId: stored.keyId,
      secret,
      keyObject: createSecretKey(secret),
      createdAt: stored.createdAt,
    });
  }
  return keys;
}

function writeNewKey(dir: string, now: Date): HmacKey {
  const secret = randomBytes(32);
  const key: HmacKey = {
    keyId: hmacKeyId(secret),
    secret,
    keyObject: createSecretKey(secret),
    createdAt: now.toISOString(),
  };
  const stored: StoredHmacKey = {
    keyId: key.keyId,
    algorithm: 'hmac-sha256',
    secret: secret.toString('base64'),
    createdAt: key.createdAt,
  };
  writeFileSync(path.join(dir, `${key.keyId}.json`), JSON.stringify(stored, null, 2) + '\n', {
    mode: 0o600,
    flag: 'wx',
  });
  return key;
}

/** A public name for a secret key: a hash of it, so the id reveals nothing usable. */
export function hmacKeyId(secret: Uint8Array): string {
  return (
    'hmac-' + createHash('sha256').update('hashproof/hmac-key-id\n').update(secret).digest('hex').slice(0, 16)
  );
}
