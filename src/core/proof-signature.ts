import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

const HMAC_SIGNATURE_PREFIX = 'hmac-sha256:';

/** The fields a proof signs (docs/api.md, "Proofs"). */
export interface SignedProofFields {
  id: string;
  timestamp: string;
  contentHash: string;
  metadataHash: string;
  label: string;
}

/**
 * The canonical signing message: JCS of `{"v":1,id,timestamp,contentHash,metadataHash,label}`.
 * Every signature and receipt of a proof, and its transparency-log leaf, are over these bytes, so anyone
 * can rebuild them from the public proof document.
 */
export function signingMessage(fields: SignedProofFields): string {
  const { contentHash, id, label, metadataHash, timestamp } = fields;
  if (isText(contentHash) && isText(id) && isText(label) && isText(metadataHash) && isText(timestamp)) {
    // What JCS writes for these six members, written directly (it is on every new proof's path, and
    // twice on a verification's): keys in UTF-16 order, each string as JSON.stringify writes it, as JCS
    // does for a well-formed string.
    const str = JSON.stringify;
    return `{"contentHash":${str(contentHash)},"id":${str(id)},"label":${str(label)},"metadataHash":${str(metadataHash)},"timestamp":${str(timestamp)},"v":1}`;
  }
  return canonicalJson({ v: 1, id, timestamp, contentHash, metadataHash, label });
}

/** A string JCS writes as JSON.stringify does (anything else goes through `canonicalJson`, and its checks). */
const isText = (value: unknown): value is string => typeof value === 'string' && value.isWellFormed();

/** `hmac-sha256:` + lowercase hex HMAC-SHA256 of the signing message. */
/** `secret` may be a KeyObject made once (createSecretKey), which spares re-importing the key per call. */
export function hmacSign(secret: Uint8Array | KeyObject, fields: SignedProofFields): string {
  return hmacOfMessage(secret, signingMessage(fields));
}

/** `hmacSign` of a signing message already made (`signingMessage`), so a signer makes it once. */
export function hmacOfMessage(secret: Uint8Array | KeyObject, message: string): string {
  return HMAC_SIGNATURE_PREFIX + createHmac('sha256', secret).update(message).digest('hex');
}

/** Recomputes the HMAC and compares it in constant time. Any malformed signature is simply invalid. */
export function hmacVerify(
  secret: Uint8Array | KeyObject,
  fields: SignedProofFields,
  signature: string,
): boolean {
  const expected = Buffer.from(hmacSign(secret, fields), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  return expected.length === given.length && timingSafeEqual(expected, given);
}
