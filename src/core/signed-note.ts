import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

/**
 * C2SP signed-note with Ed25519 signatures, and the C2SP tlog-checkpoint body it carries.
 * A note is its text, a blank line, then one line per signature: `— <key name> <base64(key id || signature)>`.
 */

const ED25519_ALGORITHM = 0x01;
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export interface NoteVerifier {
  name: string;
  keyId: Buffer;
  publicKey: KeyObject;
}

/** C2SP signed-note: key id = the first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key). */
function noteKeyId(name: string, rawPublicKey: Uint8Array): Buffer {
  return createHash('sha256')
    .update(name)
    .update('\n')
    .update(Buffer.from([ED25519_ALGORITHM]))
    .update(rawPublicKey)
    .digest()
    .subarray(0, 4);
}

/** Reads a verifier key `<name>+<hex key id>+<base64(0x01 || public key)>`, checking that its id matches. */
export function parseVerifierKey(vkey: string): NoteVerifier {
  const match = /^([^+\s]+)\+([0-9a-f]{8})\+([A-Za-z0-9+/=]+)$/.exec(vkey);
  if (!match) throw new Error('malformed verifier key');
  const [, name = '', hexId = '', encoded = ''] = match;
  const key = Buffer.from(encoded, 'base64');
  if (key.length !== 33 || key[0] !== ED25519_ALGORITHM) throw new Error('not an Ed25519 verifier key');
  const raw = key.subarray(1);
  const keyId = noteKeyId(name, raw);
  if (keyId.toString('hex') !== hexId) throw new Error('verifier key id does not match its key');
  return {
    name,
    keyId,
    publicKey: createPublicKey({
      key: Buffer.concat([SPKI_ED25519_PREFIX, raw]),
      format: 'der',
      type: 'spki',
    }),
  };
}

/** The verifier key string of an Ed25519 key pair's public half. */
export function formatVerifierKey(name: string, publicKey: KeyObject): string {
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519_PREFIX.length);
  return `${name}+${noteKeyId(name, raw).toString('hex')}+${Buffer.concat([Buffer.from([ED25519_ALGORITHM]), raw]).toString('base64')}`;
}

/** Signs note text (which must end with a newline) as `name`. */
export function signNote(text: string, name: string, privateKey: KeyObject, publicKey: KeyObject): string {
  if (!text.endsWith('\n')) throw new Error('note text must end with a newline');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519_PREFIX.length);
  const signature = sign(null, Buffer.from(text, 'utf8'), privateKey);
  return `${text}\n— ${name} ${Buffer.concat([noteKeyId(name, raw), signature]).toString('base64')}\n`;
}

/** Returns the note's text if a signature line by `verifier` verifies; throws otherwise. */
export function openNote(note: string, verifier: NoteVerifier): string {
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new Error('malformed note');
  const text = note.slice(0, split + 1);
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const match = /^— (\S+) ([A-Za-z0-9+/=]+)$/.exec(line);
    if (!match || match[1] !== verifier.name) continue;
    const blob = Buffer.from(match[2] ?? '', 'base64');
    if (blob.length !== 68 || !blob.subarray(0, 4).equals(verifier.keyId)) continue;
    if (verify(null, Buffer.from(text, 'utf8'), verifier.publicKey, blob.subarray(4))) return text;
    throw new Error('note signature does not verify');
  }
  throw new Error('no signature by the expected key');
}

export interface Checkpoint {
  origin: string;
  size: number;
  rootHash: Buffer;
  extensions: string[];
}

/** C2SP tlog-checkpoint body: origin, decimal size, base64 root hash, optional extension lines. */
export function parseCheckpoint(text: string): Checkpoint {
  const lines = text.split('\n');
  if (lines.at(-1) !== '' || lines.length < 4) throw new Error('malformed checkpoint');
  const [origin = '', size = '', root = ''] = lines;
  const rootHash = Buffer.from(root, 'base64');
  if (origin === '' || !/^(0|[1-9]\d*)$/.test(size) || rootHash.length !== 32)
    throw new Error('malformed checkpoint');
  return { origin, size: Number(size), rootHash, extensions: lines.slice(3, -1) };
}

export function formatCheckpoint(checkpoint: Checkpoint): string {
  return [
    checkpoint.origin,
    String(checkpoint.size),
    checkpoint.rootHash.toString('base64'),
    ...checkpoint.extensions,
    '',
  ].join('\n');
}
