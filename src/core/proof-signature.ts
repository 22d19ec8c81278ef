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
  return canonicalJson({
    v: 1,
    id: fields.id,
    timestamp: fields.timestamp,
    contentHash: fields.contentHash,
    metadataHash: fields.metadataHash,
    label: fields.label,
  });
}

/** `hmac-sha256:` + lowercase hex HMAC-SHA256 of the signing message. */
/** `secret` may be a KeyObject made once (createSecretKey), which spares re-importing the key per call. */
export function hmacSign(secret: Uint8Array | KeyObject, fields: SignedProofFields): string {
  return HMAC_SIGNATURE_PREFIX + createHmac('sha256', secret).update(signingMessage(fields)).digest('hex');
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
