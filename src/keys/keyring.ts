import {
  createHash,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { ed25519KeyId } from '../core/receipt.ts';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One HMAC signing key. The secret never leaves the process: not in a response, log or event. */
interface HmacKey {
  keyId: string;
  secret: Buffer;
  /** The same secret as a KeyObject, imported once for fast signing. */
  keyObject: KeyObject;
  createdAt: string;
}

/** One Ed25519 receipt key; its public half is published with its validity window. */
interface ReceiptKey {
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: string;
  validFrom: string;
  /** When it stopped signing (a newer key took over); null while it is the active key. */
  validUntil: string | null;
}

interface StoredReceiptKey {
  keyId: string;
  algorithm: 'ed25519';
  privateKey: string;
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
  #receiptKeys: ReceiptKey[];
  #logKey: LogKey | undefined;

  private constructor(dir: string, keys: HmacKey[], receiptKeys: ReceiptKey[]) {
    this.#dir = dir;
    for (const key of keys) this.#keys.set(key.keyId, key);
    this.#active = newest(keys);
    this.#receiptKeys = receiptKeys;
  }

  /** Loads every key in `dir`, creating the directory and first keys when there are none. */
  static open(dir: string): Keyring {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const keys = readKeys(dir);
    if (keys.length === 0) keys.push(writeNewKey(dir, new Date()));
    if (readReceiptKeys(dir).length === 0) writeNewReceiptKey(dir, new Date());
    return new Keyring(dir, keys, readReceiptKeys(dir));
  }

  /** The receipt key that signs new proofs. */
  get activeReceiptKey(): ReceiptKey {
    const active = this.#receiptKeys.at(-1);
    if (active === undefined) throw new Error('no receipt key');
    return active;
  }

  /** Every receipt key, oldest first, with its validity window. */
  receiptKeys(): ReceiptKey[] {
    return [...this.#receiptKeys];
  }

  findReceiptKey(keyId: string): ReceiptKey | undefined {
    const known = this.#receiptKeys.find((k) => k.keyId === keyId);
    if (known !== undefined) return known;
    this.#receiptKeys = readReceiptKeys(this.#dir);
    return this.#receiptKeys.find((k) => k.keyId === keyId);
  }

  /**
   * The transparency log's Ed25519 key: it signs every checkpoint. One key for the life of the log (a
   * verifier pins it), created on first use; instances sharing the directory share it.
   */
  get logKey(): LogKey {
    this.#logKey ??= openLogKey(this.#dir);
    return this.#logKey;
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

  /** Adds new keys (HMAC and receipt) that sign from now on; older keys keep verifying what they signed. */
  rotate(now: Date = new Date()): HmacKey {
    const key = writeNewKey(this.#dir, now);
    this.#keys.set(key.keyId, key);
    this.#active = key;
    writeNewReceiptKey(this.#dir, now);
    this.#receiptKeys = readReceiptKeys(this.#dir);
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

/** Receipt keys sorted by creation; each is valid until the next one was created. */
function readReceiptKeys(dir: string): ReceiptKey[] {
  const stored: StoredReceiptKey[] = [];
  for (const name of readdirSync(dir)) {
    if (/^ed25519-[0-9a-f]{16}\.json$/.test(name)) {
      stored.push(JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as StoredReceiptKey);
    }
  }
  stored.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId));
  return stored.map((key, i) => {
    const privateKey = createPrivateKey(key.privateKey);
    const publicKey = createPublicKey(privateKey);
    if (key.algorithm !== 'ed25519' || ed25519KeyId(publicKey) !== key.keyId) {
      throw new Error(`receipt key file ${path.join(dir, key.keyId)}.json is malformed`);
    }
    return {
      keyId: key.keyId,
      privateKey,
      publicKey,
      createdAt: key.createdAt,
      validFrom: key.createdAt,
      validUntil: stored[i + 1]?.createdAt ?? null,
    };
  });
}

function writeNewReceiptKey(dir: string, now: Date): void {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const stored: StoredReceiptKey = {
    keyId: ed25519KeyId(publicKey),
    algorithm: 'ed25519',
    privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    createdAt: now.toISOString(),
  };
  writeFileSync(path.join(dir, `${stored.keyId}.json`), JSON.stringify(stored, null, 2) + '\n', {
    mode: 0o600,
    flag: 'wx',
  });
}

/** The log's signing key (Ed25519), kept in `log-ed25519.pem`. */
export interface LogKey {
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: string;
}

const LOG_KEY_FILE = 'log-ed25519.pem';

function openLogKey(dir: string): LogKey {
  const file = path.join(dir, LOG_KEY_FILE);
  try {
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), {
      mode: 0o600,
      flag: 'wx',
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const privateKey = createPrivateKey(readFileSync(file, 'utf8'));
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new Error(`log key file ${file} is not an Ed25519 key`);
  const publicKey = createPublicKey(privateKey);
  return {
    keyId: ed25519KeyId(publicKey),
    privateKey,
    publicKey,
    createdAt: statSync(file).mtime.toISOString(),
  };
}

/** A public name for a secret key: a hash of it, so the id reveals nothing usable. */
function hmacKeyId(secret: Uint8Array): string {
  return (
    'hmac-' + createHash('sha256').update('hashproof/hmac-key-id\n').update(secret).digest('hex').slice(0, 16)
  );
}
