import type { X509Certificate } from 'node:crypto';
import { createHash, verify } from 'node:crypto';
import * as asn1js from 'asn1js';
import { SignedData } from '@peculiar/asn1-cms';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { PKIStatus, TimeStampResp, TSTInfo } from '@peculiar/asn1-tsp';

const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const SHA256 = '2.16.840.1.101.3.4.2.1';
const TIME_STAMPING = '1.3.6.1.5.5.7.3.8';

/**
 * What the checks of an RFC 3161 token read: its message imprint and genTime, the DER TSTInfo, the
 * message digest the signer signed for it, the DER SET OF signed attributes the signature covers, and
 * the signature. A client gets them by parsing the token; the service's TSA has them at hand, since it
 * built the token from them.
 */
export interface TokenParts {
  imprintAlgorithm: string;
  imprint: Buffer;
  genTime: Date;
  tstInfo: Buffer;
  messageDigest: Buffer;
  signedAttributes: Buffer;
  signature: Buffer;
}

/** The parts of a granted TimeStampResp (DER), or why it is not one. */
export function parseTimestampToken(response: Buffer): TokenParts | string {
  try {
    const parsed = AsnConvert.parse(response, TimeStampResp);
    if (parsed.status.status !== PKIStatus.granted || parsed.timeStampToken === undefined)
      return 'not granted';
    const signedData = AsnConvert.parse(parsed.timeStampToken.content, SignedData);
    const content = signedData.encapContentInfo.eContent?.single?.buffer;
    if (content === undefined) return 'the token has no TSTInfo';
    const info = AsnConvert.parse(content, TSTInfo);
    const signer = signedData.signerInfos[0];
    if (signer?.signedAttrs === undefined) return 'the token has no signed attributes';
    const digest = signer.signedAttrs.find((a) => a.attrType === MESSAGE_DIGEST)?.attrValues[0];
    if (digest === undefined) return 'the token has no message digest';
    return {
      imprintAlgorithm: info.messageImprint.hashAlgorithm.algorithm,
      imprint: Buffer.from(info.messageImprint.hashedMessage.buffer),
      genTime: info.genTime,
      tstInfo: Buffer.from(content),
      messageDigest: Buffer.from(AsnConvert.parse(digest, OctetString).buffer),
      // The signature covers the DER SET OF the signed attributes (as encoded in the token).
      signedAttributes: Buffer.from(
        new asn1js.Set({
          value: signer.signedAttrs.map((a) => asn1js.fromBER(AsnConvert.serialize(a)).result),
        }).toBER(),
      ),
      signature: Buffer.from(signer.signature.buffer),
    };
  } catch {
    return 'the token does not parse';
  }
}

/** Is the TSA certificate issued by `root` and marked for time-stamping? Why not, or undefined. */
export function checkTsaChain(tsaCertificate: X509Certificate, root: X509Certificate): string | undefined {
  try {
    if (!root.verify(root.publicKey) || !root.checkIssued(root)) return 'the root does not sign itself';
    if (!tsaCertificate.verify(root.publicKey) || !tsaCertificate.checkIssued(root))
      return 'the TSA certificate is not issued by the root';
  } catch {
    return 'a certificate of the chain has a public key that does not decode';
  }
  if (!(tsaCertificate.keyUsage ?? []).includes(TIME_STAMPING))
    return 'the certificate is not for time-stamping';
  return undefined;
}

/** How far a token's genTime may follow the proof's timestamp: it is rounded up to the whole second. */
const ROUNDING_MS = 1000;

/**
 * Checks an RFC 3161 token as a client holding it would (RFC 3161 §2.4.2, RFC 5652 §5.4): its imprint
 * is `hash` (SHA-256), its genTime is the proof's `timestamp` or a moment of the second after it
 * (`0 ≤ genTime − timestamp < 1 s`: new tokens round it up to the whole second, older ones carry it to
 * the millisecond; docs/decisions.md, "Whole-second genTime in time-stamp tokens"), the signed message
 * digest is that of the TSTInfo, and the ECDSA/RSA signature over the signed attributes verifies with the
 * TSA certificate (whose chain `checkTsaChain` checks). Returns why not, or undefined.
 */
export function checkTimestampToken(
  token: TokenParts,
  hash: Buffer,
  timestamp: Date,
  tsaCertificate: X509Certificate,
): string | undefined {
  if (token.imprintAlgorithm !== SHA256) return 'the imprint is not SHA-256';
  if (!token.imprint.equals(hash)) return 'the imprint is another hash';
  const after = token.genTime.getTime() - timestamp.getTime();
  if (!(after >= 0 && after < ROUNDING_MS))
    return 'genTime is not the proof timestamp rounded up to the whole second';
  if (!createHash('sha256').update(token.tstInfo).digest().equals(token.messageDigest))
    return 'the message digest does not match the TSTInfo';
  try {
    const isValid = verify(
      'sha256',
      token.signedAttributes,
      { key: tsaCertificate.publicKey, dsaEncoding: 'der' },
      token.signature,
    );
    return isValid ? undefined : 'the signature does not verify with the TSA certificate';
  } catch {
    return 'the signature does not verify with the TSA certificate';
  }
}
