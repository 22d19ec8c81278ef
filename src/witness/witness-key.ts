import { createHash, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { mkdir, open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../client/atomic-file.ts';
import { cosignerKeyOf, formatCosignerKey, isValidKeyName, type CosignerKey } from '../core/cosignature.ts';
import { KeyFileModeError } from '../keys/key-directory.ts';

/**
 * The witness's key in its keys directory: `witness-key.json` (its name and its Ed25519 private key in
 * PKCS #8 PEM, mode 0600, created once and never rewritten) and `witness.vkey` (its verifier key, for
 * anyone, written again at each start should it be missing or stale).
 */
export const KEY_FILE = 'witness-key.json';
export const VKEY_FILE = 'witness.vkey';

interface StoredKey {
  name: string;
  privateKey: string;
  createdAt: string;
}

/** The name a new key gets when none is given: not a reachable address, only a distinct one. */
const defaultName = (rawPublicKey: Buffer): string =>
  `hashproof-witness/${createHash('sha256').update(rawPublicKey).digest('hex').slice(0, 16)}`;

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function readKey(file: string): Promise<CosignerKey | undefined> {
  let stats;
  try {
    stats = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  if (!stats.isFile()) throw new Error(`witness key file ${file} is not a regular file`);
  const mode = stats.mode & 0o777;
  if ((mode & 0o077) !== 0)
    throw new KeyFileModeError(
      `witness key file ${file} is open to group or others (mode ${mode.toString(8).padStart(4, '0')}): run chmod 600 ${file}`,
    );
  let stored: StoredKey;
  try {
    stored = JSON.parse(await readFile(file, 'utf8')) as StoredKey;
    if (!isValidKeyName(stored.name)) throw new Error('bad name');
    return cosignerKeyOf(stored.name, createPrivateKey(stored.privateKey));
  } catch {
    throw new Error(`witness key file ${file} is not a witness key (name and Ed25519 private key)`);
  }
}

/**
 * The witness's key in `dir`, made on the first start (named `name`, or a name derived from the key).
 * `created` says whether it was made now. A later start with another `name` is refused: the name is
 * part of the key's identity.
 */
export async function witnessKey(
  dir: string,
  name: string | undefined,
): Promise<{ key: CosignerKey; vkey: string; created: boolean }> {
  if (name !== undefined && !isValidKeyName(name))
    throw new Error(`--name must be non-empty, without spaces or "+"; got ${JSON.stringify(name)}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, KEY_FILE);
  let key = await readKey(file);
  const created = key === undefined;
  if (key === undefined) {
    const made = generateKeyPairSync('ed25519');
    // The raw key is the last 32 bytes of its SPKI encoding.
    const raw = made.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
    key = cosignerKeyOf(name ?? defaultName(raw), made.privateKey);
    const stored: StoredKey = {
      name: key.name,
      privateKey: key.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      createdAt: new Date().toISOString(),
    };
    const handle = await open(file, 'wx', 0o600); // never over a key made meanwhile
    try {
      await handle.writeFile(`${JSON.stringify(stored, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await syncDirectory(dir);
  } else if (name !== undefined && name !== key.name) {
    throw new Error(`the witness key in ${dir} is named ${key.name}, not ${name}`);
  }
  const vkey = formatCosignerKey(key.name, key.publicKey);
  const vkeyFile = path.join(dir, VKEY_FILE);
  const written = await readFile(vkeyFile, 'utf8').catch(() => undefined);
  if (written !== `${vkey}\n`) await writeFileAtomic(vkeyFile, `${vkey}\n`, 0o644);
  return { key, vkey, created };
}
