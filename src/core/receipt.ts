import { createHash, sign, verify, type KeyObject } from 'node:crypto';

const RECEIPT_PREFIX = 'ed25519:';

/**
 * The public-key receipt of a proof: `ed25519:` + base64 Ed25519 signature over the same canonical
 * signing message as the HMAC (see proof-signature.ts). Anyone with the public key can check it offline.
 */
export function signReceipt(privateKey: KeyObject, message: string): string {
  return encodeReceipt(sign(null, Buffer.from(message, 'utf8'), privateKey));
}

/** The receipt text of an Ed25519 signature over the signing message. */
export function encodeReceipt(signature: Buffer): string {
  return RECEIPT_PREFIX + signature.toString('base64');
}

export function verifyReceipt(publicKey: KeyObject, message: string, receipt: string): boolean {
  if (!receipt.startsWith(RECEIPT_PREFIX)) return false;
  const encoded = receipt.slice(RECEIPT_PREFIX.length);
  const signature = Buffer.from(encoded, 'base64');
  // Only the one canonical encoding: Node's decoder skips characters it does not know, so another
  // spelling of the same signature would otherwise verify too.
  if (signature.length !== 64 || signature.toString('base64') !== encoded) return false;
  try {
    return verify(null, Buffer.from(message, 'utf8'), publicKey, signature);
  } catch {
    return false;
  }
}

/** A key's public name: `ed25519-` + the first 16 hex digits of SHA-256 of its SPKI encoding. */
export function ed25519KeyId(publicKey: KeyObject): string {
  return (
    'ed25519-' +
    createHash('sha256')
      .update(publicKey.export({ format: 'der', type: 'spki' }))
      .digest('hex')
      .slice(0, 16)
  );
}
