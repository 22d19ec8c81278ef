import { createHash, verify, X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import { ContentInfo, SignedData } from '@peculiar/asn1-cms';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { TSTInfo } from '@peculiar/asn1-tsp';

/**
 * RFC 3161 time-stamp tokens of any authority, not only ours: the anchors of the log's checkpoints
 * (docs/verification.md, "Anchors"). A token is checked on its own terms (RFC 3161 §2.4.2, RFC 5652
 * §5.4): imprint, nonce, the signed message digest of its TSTInfo, and the signature with the signer's
 * certificate carried in the token; then, when trust roots are given, that certificate's chain to one
 * of them, for time-stamping, valid at the token's genTime.
 */

const TST_INFO = '1.2.840.113549.1.9.16.1.4';
const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const TIME_STAMPING = '1.3.6.1.5.5.7.3.8';
/** The digest algorithms a signer may use, by OID. */
const DIGESTS: Record<string, string> = {
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
/** The most certificates a chain may climb (the token's own and intermediates). */
const MAX_CHAIN = 8;

export interface TokenCheck {
  genTime: Date;
  /** The subject of the certificate that signed the token. */
  signer: string;
  /** `trusted`: the chain reaches one of the roots given; `unchecked`: no roots were given. */
  chain: 'trusted' | 'unchecked';
}

interface ReadToken {
  imprintAlgorithm: string;
  imprint: Buffer;
  genTime: Date;
  nonce: Buffer | undefined;
  tstInfo: Buffer;
  digest: string;
  messageDigest: Buffer;
  signedAttributes: Buffer;
  signature: Buffer;
  certificates: X509Certificate[];
}

function read(token: Buffer): ReadToken | string {
  try {
    const info = AsnConvert.parse(token, ContentInfo);
    const signedData = AsnConvert.parse(info.content, SignedData);
    if (signedData.encapContentInfo.eContentType !== TST_INFO) return 'the token does not hold a TSTInfo';
    const content = signedData.encapContentInfo.eContent?.single?.buffer;
    if (content === undefined) return 'the token has no TSTInfo';
    const tst = AsnConvert.parse(content, TSTInfo);
    if (signedData.signerInfos.length !== 1) return 'the token has not exactly one signer';
    const signer = signedData.signerInfos[0]!;
    const digest = DIGESTS[signer.digestAlgorithm.algorithm];
    if (digest === undefined) return 'the signer uses a digest algorithm other than SHA-2';
    const attributes = signer.signedAttrs;
    const digestValue = attributes?.find((a) => a.attrType === MESSAGE_DIGEST)?.attrValues[0];
    if (attributes === undefined || digestValue === undefined)
      return 'the token has no signed message digest';
    const certificates = (signedData.certificates ?? [])
      .filter((choice) => choice.certificate !== undefined)
      .map((choice) => new X509Certificate(Buffer.from(AsnConvert.serialize(choice.certificate!))));
    return {
      imprintAlgorithm: tst.messageImprint.hashAlgorithm.algorithm,
      imprint: Buffer.from(tst.messageImprint.hashedMessage.buffer),
      genTime: tst.genTime,
      nonce: tst.nonce === undefined ? undefined : Buffer.from(tst.nonce),
      tstInfo: Buffer.from(content),
      digest,
      messageDigest: Buffer.from(AsnConvert.parse(digestValue, OctetString).buffer),
      // The signature covers the DER SET OF the signed attributes, as encoded in the token.
      signedAttributes: Buffer.from(
        new asn1js.Set({
          value: attributes.map((a) => asn1js.fromBER(AsnConvert.serialize(a)).result),
        }).toBER(),
      ),
      signature: Buffer.from(signer.signature.buffer),
      certificates,
    };
  } catch {
    return 'the token does not parse';
  }
}

/** An INTEGER's big-endian bytes without the leading zeros DER may add. */
const integerBytes = (bytes: Buffer): Buffer => {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  return bytes.subarray(start);
};

function signs(certificate: X509Certificate, token: ReadToken): boolean {
  try {
    return verify(
      token.digest,
      token.signedAttributes,
      { key: certificate.publicKey, dsaEncoding: 'der' },
      token.signature,
    );
  } catch {
    return false;
  }
}

/** Climbs from `leaf` through `intermediates` to one of `roots`; why not, or undefined. */
function chainToRoots(
  leaf: X509Certificate,
  intermediates: X509Certificate[],
  roots: X509Certificate[],
  at: Date,
): string | undefined {
  const validAt = (cert: X509Certificate) => new Date(cert.validFrom) <= at && at <= new Date(cert.validTo);
  const issues = (issuer: X509Certificate, cert: X509Certificate) =>
    cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  let cert = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    if (!validAt(cert)) return `the certificate ${cert.subject} was not valid at the token's genTime`;
    if (roots.some((root) => root.raw.equals(cert.raw) || issues(root, cert))) return undefined;
    const issuer = intermediates.find((candidate) => candidate !== cert && issues(candidate, cert));
    if (issuer === undefined) return 'the signer certificate does not chain to a trusted root';
    cert = issuer;
  }
  return 'the certificate chain is too long';
}

/**
 * Checks a DER TimeStampToken over `imprint` (SHA-256), with `nonce` when the request carried one,
 * and against `roots` when given. Returns what it establishes, or why it fails.
 */
export function checkExternalToken(
  token: Buffer,
  expected: { imprint: Buffer; nonce?: Buffer },
  roots?: X509Certificate[],
): TokenCheck | string {
  const parsed = read(token);
  if (typeof parsed === 'string') return parsed;
  if (DIGESTS[parsed.imprintAlgorithm] !== 'sha256') return 'the imprint is not SHA-256';
  if (!parsed.imprint.equals(expected.imprint)) return 'the imprint is another hash';
  if (expected.nonce !== undefined) {
    if (parsed.nonce === undefined || !integerBytes(parsed.nonce).equals(integerBytes(expected.nonce)))
      return 'the nonce is not the one sent';
  }
  if (!createHash(parsed.digest).update(parsed.tstInfo).digest().equals(parsed.messageDigest))
    return 'the message digest does not match the TSTInfo';
  const signer = parsed.certificates.find((certificate) => signs(certificate, parsed));
  if (signer === undefined) return 'no certificate in the token verifies its signature';
  if (!(signer.keyUsage ?? []).includes(TIME_STAMPING))
    return 'the signer certificate is not for time-stamping';
  if (roots === undefined) return { genTime: parsed.genTime, signer: signer.subject, chain: 'unchecked' };
  const why = chainToRoots(signer, parsed.certificates, roots, parsed.genTime);
  return why ?? { genTime: parsed.genTime, signer: signer.subject, chain: 'trusted' };
}

/** The certificates of a PEM bundle (trust roots given on the command line). */
export function certificatesOfPem(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}
