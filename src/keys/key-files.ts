import {
  createHash,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync, type Stats } from 'node:fs';
import path from 'node:path';
import { ed25519KeyId } from '../core/receipt.ts';

/** A signing key file that others than its owner may read: the service and `hashproof keys` refuse it. */
export class KeyFileModeError extends Error {
  override name = 'KeyFileModeError';
}

/**
 * The key files of SIGNING_KEYS_DIR: `hmac-<id>.json`, `ed25519-<id>.json` (receipt keys) and
 * `log-ed25519.pem`. A file is created exclusively (mode 0600) and never rewritten. A key signs from its
 * `createdAt` until the next key of its kind was created (`validUntil`), so a rotation may name a time
 * still to come for the new keys to take over. A key file that group or others may open is refused
 * wherever keys are read (start, SIGHUP, `hashproof keys`): a secret another account can read is not
 * the service's alone.
 */

/** One HMAC signing key. The secret never leaves the process: not in a response, log or event. */
export interface HmacKey {
  keyId: string;
  secret: Buffer;
  /** The same secret as a KeyObject, imported once for fast signing. */
  keyObject: KeyObject;
  createdAt: string;
  /** When the next HMAC key took over; null for the newest. */
  validUntil: string | null;
}

/** One Ed25519 receipt key; its public half is published with its validity window. */
export interface ReceiptKey {
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: string;
  validFrom: string;
  /** When it stopped signing (a newer key took over); null while it is the newest key. */
  validUntil: string | null;
}

/** The log's signing key (Ed25519), kept in `log-ed25519.pem`. */
export interface LogKey {
  keyId: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: string;
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

const LOG_KEY_FILE = 'log-ed25519.pem';
/** Every key file of the directory: HMAC, receipt, log key, and the TSA's (tsa/tsa.ts). */
const KEY_FILE_NAME = /^(?:(?:hmac|ed25519)-[0-9a-f]{16}\.json|log-ed25519\.pem|tsa\.json)$/;

/** Whether `name` is the name of a key file of SIGNING_KEYS_DIR (and so of a backup's `keys/`). */
export const isKeyFileName = (name: string): boolean => KEY_FILE_NAME.test(name);

/**
 * The names of the key files in `dir`, each checked first (`checkPrivate`). Symbolic links are
 * followed: secrets are often mounted so (Kubernetes); what counts is the file read.
 */
function keyFileNames(dir: string): string[] {
  const names = readdirSync(dir).filter(isKeyFileName);
  for (const name of names) checkPrivate(path.join(dir, name), statSync(path.join(dir, name)));
  return names;
}

/** Throws unless `file` is a regular file that only its owner may open (0600 or 0400). */
function checkPrivate(file: string, stats: Stats): void {
  if (!stats.isFile()) throw new Error(`signing key file ${file} is not a regular file`);
  const mode = stats.mode & 0o777;
  if ((mode & 0o077) !== 0)
    throw new KeyFileModeError(
      `signing key file ${file} is open to group or others (mode ${mode.toString(8).padStart(4, '0')}): run chmod 600 ${file}`,
    );
}

const byCreation = (a: { createdAt: string; keyId: string }, b: { createdAt: string; keyId: string }) =>
  a.createdAt.localeCompare(b.createdAt) || a.keyId.localeCompare(b.keyId);

/** HMAC keys sorted by creation; each is valid until the next one was created. */
export function readHmacKeys(dir: string): HmacKey[] {
  const stored: StoredHmacKey[] = [];
  for (const name of keyFileNames(dir)) {
    if (name.startsWith('hmac-'))
      stored.push(JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as StoredHmacKey);
  }
  stored.sort(byCreation);
  return stored.map((key, i) => {
    const secret = Buffer.from(key.secret, 'base64');
    if (key.algorithm !== 'hmac-sha256' || secret.length < 32 || key.keyId !== hmacKeyId(secret)) {
      throw new Error(`signing key file ${path.join(dir, key.keyId)}.json is malformed`);
    }
    return {
      keyId: key.keyId,
      secret,
      keyObject: createSecretKey(secret),
      createdAt: key.createdAt,
      validUntil: stored[i + 1]?.createdAt ?? null,
    };
  });
}

export function writeHmacKey(dir: string, from: Date): string {
  const secret = randomBytes(32);
  const stored: StoredHmacKey = {
    keyId: hmacKeyId(secret),
    algorithm: 'hmac-sha256',
    secret: secret.toString('base64'),
    createdAt: from.toISOString(),
  };
  writeExclusive(path.join(dir, `${stored.keyId}.json`), JSON.stringify(stored, null, 2) + '\n');
  return stored.keyId;
}

/** Receipt keys sorted by creation; each is valid until the next one was created. */
export function readReceiptKeys(dir: string): ReceiptKey[] {
  const stored: StoredReceiptKey[] = [];
  for (const name of keyFileNames(dir)) {
    if (name.startsWith('ed25519-')) {
      stored.push(JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as StoredReceiptKey);
    }
  }
  stored.sort(byCreation);
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

export function writeReceiptKey(dir: string, from: Date): string {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const stored: StoredReceiptKey = {
    keyId: ed25519KeyId(publicKey),
    algorithm: 'ed25519',
    privateKey: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    createdAt: from.toISOString(),
  };
  writeExclusive(path.join(dir, `${stored.keyId}.json`), JSON.stringify(stored, null, 2) + '\n');
  return stored.keyId;
}

/** The log key of `dir`, created first when `create` and there is none; undefined when absent. */
export function readLogKey(dir: string, create: boolean): LogKey | undefined {
  const file = path.join(dir, LOG_KEY_FILE);
  if (create) {
    try {
      const { privateKey } = generateKeyPairSync('ed25519');
      writeExclusive(file, privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  let pem;
  try {
    checkPrivate(file, statSync(file));
    pem = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const privateKey = createPrivateKey(pem);
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

function writeExclusive(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600, flag: 'wx' });
}

/** A public name for a secret key: a hash of it, so the id reveals nothing usable. */
function hmacKeyId(secret: Uint8Array): string {
  return (
    'hmac-' + createHash('sha256').update('hashproof/hmac-key-id\n').update(secret).digest('hex').slice(0, 16)
  );
}
