import { createHash, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/**
 * C2SP tlog-cosignature v1 (https://c2sp.org/tlog-cosignature), the Ed25519 kind: a witness's statement
 * that, as of a time, the checkpoint is the largest consistent one it has seen of the log. It is a
 * signed-note signature line `— <name> base64(key id ‖ timestamp ‖ signature)`, where
 * - key id = SHA-256(name ‖ 0x0A ‖ 0x04 ‖ 32-byte Ed25519 public key)[:4],
 * - timestamp = 8 bytes, big-endian POSIX seconds (at most 2^63 − 1),
 * - signature = Ed25519 over `cosignature/v1\ntime <decimal seconds>\n` followed by the checkpoint's
 *   note text (its body with the final newline, without the blank line and the signature lines).
 * A cosigner's verifier key is `<name>+<hex key id>+base64(0x04 ‖ public key)`.
 */

const COSIGNATURE_V1 = 0x04;
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
/** key id (4) ‖ timestamp (8) ‖ Ed25519 signature (64). */
const BLOB_LENGTH = 76;
const MAX_TIMESTAMP = 2n ** 63n - 1n;

/** A witness's public key as a verifier of its cosignatures. */
export interface Cosigner {
  name: string;
  keyId: Buffer;
  publicKey: KeyObject;
}

/** A witness's own key: it signs cosignatures. */
export interface CosignerKey extends Cosigner {
  privateKey: KeyObject;
}

/** One cosignature line, read but not yet verified. */
export interface CosignatureLine {
  name: string;
  keyId: Buffer;
  /** POSIX seconds. */
  timestamp: number;
  signature: Buffer;
}

/** signed-note: a key name is non-empty and holds no Unicode space, no `+` and no control character. */
export const isValidKeyName = (name: string): boolean => /^[^\s+\p{Cc}]+$/u.test(name);

/** Strict standard base64: the text is exactly what its bytes encode to. */
export function decodeBase64Strict(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

const rawPublicKey = (publicKey: KeyObject): Buffer =>
  publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519_PREFIX.length);

/** SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)[:4]. */
export function cosignerKeyId(name: string, raw: Uint8Array): Buffer {
  return createHash('sha256')
    .update(name, 'utf8')
    .update('\n')
    .update(Buffer.from([COSIGNATURE_V1]))
    .update(raw)
    .digest()
    .subarray(0, 4);
}

/** `<name>+<hex key id>+base64(0x04 ‖ public key)`. */
export function formatCosignerKey(name: string, publicKey: KeyObject): string {
  if (!isValidKeyName(name)) throw new Error('a key name is non-empty, without spaces or "+"');
  const raw = rawPublicKey(publicKey);
  const encoded = Buffer.concat([Buffer.from([COSIGNATURE_V1]), raw]).toString('base64');
  return `${name}+${cosignerKeyId(name, raw).toString('hex')}+${encoded}`;
}

/** Reads a cosigner's verifier key, checking its algorithm byte (0x04) and that its id matches its key. */
export function parseCosignerKey(vkey: string): Cosigner {
  const parts = vkey.split('+');
  // The base64 part may itself hold "+": the name and the id are the first two parts.
  const [name = '', hexId = ''] = parts;
  const key = decodeBase64Strict(parts.slice(2).join('+'));
  if (parts.length < 3 || !isValidKeyName(name) || !/^[0-9a-f]{8}$/.test(hexId) || key === undefined)
    throw new Error('malformed verifier key');
  if (key.length !== 33 || key[0] !== COSIGNATURE_V1)
    throw new Error('not an Ed25519 cosignature (tlog-cosignature v1, type 0x04) verifier key');
  const raw = key.subarray(1);
  const keyId = cosignerKeyId(name, raw);
  if (keyId.toString('hex') !== hexId) throw new Error('verifier key id does not match its key');
  const publicKey = createPublicKey({
    key: Buffer.concat([SPKI_ED25519_PREFIX, raw]),
    format: 'der',
    type: 'spki',
  });
  return { name, keyId, publicKey };
}

/** A new Ed25519 cosigner key named `name`, with its verifier key. */
export function generateCosignerKey(name: string): CosignerKey & { vkey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const vkey = formatCosignerKey(name, publicKey);
  return { name, keyId: cosignerKeyId(name, rawPublicKey(publicKey)), publicKey, privateKey, vkey };
}

/** The cosigner key of an Ed25519 private key. */
export function cosignerKeyOf(name: string, privateKey: KeyObject): CosignerKey {
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('a cosigner key is an Ed25519 key');
  const publicKey = createPublicKey(privateKey);
  return { name, keyId: cosignerKeyId(name, rawPublicKey(publicKey)), publicKey, privateKey };
}

/** The message a v1 cosignature signs: two header lines, then the checkpoint's note text. */
export function cosignedMessage(checkpointText: string, timestamp: number): Buffer {
  if (!checkpointText.endsWith('\n')) throw new Error('a checkpoint text ends with a newline');
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new Error('a timestamp is POSIX seconds');
  return Buffer.from(`cosignature/v1\ntime ${timestamp}\n${checkpointText}`, 'utf8');
}

/** The cosignature line (without its final newline) of `key` on the checkpoint text at `timestamp`. */
export function cosign(checkpointText: string, timestamp: number, key: CosignerKey): string {
  const signature = sign(null, cosignedMessage(checkpointText, timestamp), key.privateKey);
  const time = Buffer.alloc(8);
  time.writeBigUInt64BE(BigInt(timestamp));
  return `— ${key.name} ${Buffer.concat([key.keyId, time, signature]).toString('base64')}`;
}

/**
 * Reads one signature line `— <name> <base64>` as a v1 cosignature: 76 bytes, a timestamp of at most
 * 2^63 − 1 (and, here, at most 2^53 − 1: a time millions of years ahead is refused). Throws otherwise.
 */
export function parseCosignatureLine(line: string): CosignatureLine {
  const match = /^— (\S+) (\S+)$/u.exec(line);
  const blob = match ? decodeBase64Strict(match[2] ?? '') : undefined;
  if (!match || !isValidKeyName(match[1] ?? '') || blob === undefined)
    throw new Error('malformed signature line');
  if (blob.length !== BLOB_LENGTH) throw new Error('not a v1 cosignature: wrong length');
  const time = blob.readBigUInt64BE(4);
  if (time > MAX_TIMESTAMP || time > BigInt(Number.MAX_SAFE_INTEGER))
    throw new Error('cosignature timestamp out of range');
  return {
    name: match[1] ?? '',
    keyId: blob.subarray(0, 4),
    timestamp: Number(time),
    signature: blob.subarray(12),
  };
}

/** Whether a signature line names `cosigner` (its name and key id); other lines are ignored, not refused. */
export function isLineOf(line: string, cosigner: Cosigner): boolean {
  const match = /^— (\S+) (\S+)$/u.exec(line);
  if (!match || match[1] !== cosigner.name) return false;
  const blob = decodeBase64Strict(match[2] ?? '');
  return blob !== undefined && blob.length >= 4 && blob.subarray(0, 4).equals(cosigner.keyId);
}

/**
 * Verifies a cosignature line by `cosigner` over the checkpoint's note text; returns its timestamp.
 * Throws when the line is malformed, is not by `cosigner`, or its signature does not verify.
 */
export function verifyCosignature(checkpointText: string, line: string, cosigner: Cosigner): number {
  const parsed = parseCosignatureLine(line);
  if (parsed.name !== cosigner.name || !parsed.keyId.equals(cosigner.keyId))
    throw new Error('the cosignature is by another key');
  const message = cosignedMessage(checkpointText, parsed.timestamp);
  if (!verify(null, message, cosigner.publicKey, parsed.signature))
    throw new Error('the cosignature does not verify');
  return parsed.timestamp;
}

/** A signed note split into its text (with its final newline) and its signature lines. */
export interface SplitNote {
  text: string;
  lines: string[];
}

/**
 * Splits a signed note at its last blank line. Throws unless it ends with a newline, has at least one
 * signature line, every signature line is `— <name> <base64>`, and it holds no control character but
 * the newline (signed-note).
 */
export function splitNote(note: string): SplitNote {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0009\u000b-\u001f\u007f]/.test(note)) throw new Error('control character in the note');
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n') || split + 2 >= note.length) throw new Error('malformed note');
  const lines = note.slice(split + 2, -1).split('\n');
  for (const line of lines) {
    const match = /^— (\S+) (\S+)$/u.exec(line);
    const blob = match ? decodeBase64Strict(match[2] ?? '') : undefined;
    if (!match || !isValidKeyName(match[1] ?? '') || blob === undefined || blob.length < 5)
      throw new Error('malformed signature line');
  }
  return { text: note.slice(0, split + 1), lines };
}

/**
 * The cosigners of `cosigners` whose cosignature on the note verifies, each with its timestamp. A line
 * naming one of them (name and key id) that does not verify rejects the whole note (throws); lines of
 * other keys are ignored.
 */
export function verifiedCosigners(
  note: string,
  cosigners: readonly Cosigner[],
): { cosigner: Cosigner; timestamp: number }[] {
  const { text, lines } = splitNote(note);
  const found: { cosigner: Cosigner; timestamp: number }[] = [];
  for (const line of lines) {
    for (const cosigner of cosigners) {
      if (!isLineOf(line, cosigner)) continue;
      const timestamp = verifyCosignature(text, line, cosigner);
      if (!found.some((seen) => seen.cosigner === cosigner)) found.push({ cosigner, timestamp });
    }
  }
  return found;
}
