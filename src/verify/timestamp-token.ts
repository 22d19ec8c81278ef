import type { X509Certificate } from 'node:crypto';
import { createHash, verify } from 'node:crypto';
import * as asn1js from 'asn1js';
import { SignedData } from '@peculiar/asn1-cms';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { PKIStatus, TimeStampResp, TSTInfo } from '@peculiar/asn1-tsp';

const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const SHA256 = '2.16.840.1.101.3.4.2.1';

/**
 * Checks an RFC 3161 TimeStampResp offline, as a client holding the token and the TSA chain would: the
 * response is granted, its imprint is `hash` (SHA-256), its genTime is `genTime`, the signed attributes
 * carry the digest of the TSTInfo, the ECDSA/RSA signature verifies with the TSA certificate, and that
 * certificate is issued by `root` and marked for time-stamping. Returns why not, or undefined.
 */
export function verifyTimestampToken(
  response: Buffer,
  hash: Buffer,
  genTime: Date,
  tsaCertificate: X509Certificate,
  root: X509Certificate,
): string | undefined {
  try {
    if (!tsaCertificate.verify(root.publicKey) || !tsaCertificate.checkIssued(root))
      return 'the TSA certificate is not issued by the root';
    if (!(tsaCertificate.keyUsage ?? []).includes('1.3.6.1.5.5.7.3.8'))
      return 'the certificate is not for time-stamping';
    const parsed = AsnConvert.parse(response, TimeStampResp);
    if (parsed.status.status !== PKIStatus.granted || parsed.timeStampToken === undefined)
      return 'not granted';
    const signedData = AsnConvert.parse(parsed.timeStampToken.content, SignedData);
    const content = signedData.encapContentInfo.eContent?.single?.buffer;
    if (content === undefined) return 'the token has no TSTInfo';
    const info = AsnConvert.parse(content, TSTInfo);
    if (info.messageImprint.hashAlgorithm.algorithm !== SHA256) return 'the imprint is not SHA-256';
    if (!Buffer.from(info.messageImprint.hashedMessage.buffer).equals(hash))
      return 'the imprint is another hash';
    if (info.genTime.getTime() !== genTime.getTime()) return 'genTime is not the proof timestamp';
    const signer = signedData.signerInfos[0];
    if (signer?.signedAttrs === undefined) return 'the token has no signed attributes';
    const digest = signer.signedAttrs.find((a) => a.attrType === MESSAGE_DIGEST)?.attrValues[0];
    if (digest === undefined) return 'the token has no message digest';
    const expected = createHash('sha256').update(Buffer.from(content)).digest();
    if (!Buffer.from(AsnConvert.parse(digest, OctetString).buffer).equals(expected))
      return 'the message digest does not match the TSTInfo';
    // The signature covers the DER SET OF the signed attributes (as encoded in the token).
    const set = Buffer.from(
      new asn1js.Set({
        value: signer.signedAttrs.map((a) => asn1js.fromBER(AsnConvert.serialize(a)).result),
      }).toBER(),
    );
    const isValid = verify(
      'sha256',
      set,
      { key: tsaCertificate.publicKey, dsaEncoding: 'der' },
      Buffer.from(signer.signature.buffer),
    );
    return isValid ? undefined : 'the signature does not verify with the TSA certificate';
  } catch {
    return 'the token does not parse';
  }
}
