import { hash } from 'node:crypto';
import * as asn1js from 'asn1js';
import { IssuerAndSerialNumber } from '@peculiar/asn1-cms';
import { AsnConvert } from '@peculiar/asn1-schema';
import { Certificate } from '@peculiar/asn1-x509';

/**
 * The DER of RFC 3161 time-stamp responses: the TSTInfo, the CMS SignedData around it with the
 * signed attributes its signature covers, and rejections. Everything here is a pure function of the
 * request, the TSA certificate and the signature, so a token is rebuilt byte for byte from those.
 */

/** The policy of our tokens: an OID under the UUID arc (ITU-T X.667), which needs no registration. */
export const TSA_POLICY = '2.25.311911732591093965693728091516225122863';

export const OID = {
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  signedData: '1.2.840.113549.1.7.2',
  tstInfo: '1.2.840.113549.1.9.16.1.4',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
} as const;

/** The message imprints a token may carry: hash algorithm OID → its name and digest length. */
export const HASH_LENGTHS: Record<string, { name: string; length: number }> = {
  [OID.sha256]: { name: 'sha256', length: 32 },
  [OID.sha384]: { name: 'sha384', length: 48 },
  [OID.sha512]: { name: 'sha512', length: 64 },
};

export interface TokenRequest {
  /** The hashed message and its algorithm OID (SHA-256 for proofs). */
  hash: Buffer;
  hashAlgorithm?: string;
  /** Written to the millisecond it holds; a time on a whole second has no fraction (`generalizedTime`). */
  genTime: Date;
  /** A positive integer, big-endian; unique per token. */
  serial: Buffer;
  nonce?: Buffer;
  /** Put the TSA certificate in the token (RFC 3161 certReq). */
  includeCertificate: boolean;
}

/** What a token says of the TSA that signed it, read once from its certificate. */
export interface TokenSigner {
  certDer: Buffer;
  /** SHA-256 of the certificate, named by the SigningCertificateV2 attribute. */
  certHash: Buffer;
  issuerAndSerial: Buffer;
  /** The TSTInfo `tsa` field: the certificate's subject as a GeneralName. */
  tsaName: Buffer;
}

export function tokenSigner(certDer: Buffer): TokenSigner {
  const tbs = AsnConvert.parse(certDer, Certificate).tbsCertificate;
  return {
    certDer,
    certHash: sha256(certDer),
    issuerAndSerial: Buffer.from(
      AsnConvert.serialize(new IssuerAndSerialNumber({ issuer: tbs.issuer, serialNumber: tbs.serialNumber })),
    ),
    // tsa [0] GeneralName: directoryName [4] Name, both explicit (Name is a CHOICE).
    tsaName: tlv(0xa0, tlv(0xa4, Buffer.from(AsnConvert.serialize(tbs.subject)))),
  };
}

/** The TSTInfo of a request and the signed attributes over it; the signature covers `set`. */
export function signedAttributes(
  request: TokenRequest,
  signer: TokenSigner,
): { tstInfo: Buffer; digest: Buffer; attributes: Buffer[]; set: Buffer } {
  const tstInfo = seq(
    DER.version1,
    POLICY_DER,
    seq(algorithmId(request.hashAlgorithm ?? OID.sha256), tlv(0x04, request.hash)),
    int(request.serial),
    generalizedTime(request.genTime),
    ACCURACY_DER,
    ...(request.nonce ? [int(request.nonce)] : []),
    signer.tsaName,
  );
  const digest = sha256(tstInfo);
  const attributes = [
    DER.contentTypeAttribute,
    seq(DER.messageDigest, tlv(0x31, tlv(0x04, digest))),
    signingCertificateAttribute(signer),
  ].sort((a, b) => Buffer.compare(a, b)); // DER orders a SET OF by encoding
  return { tstInfo, digest, attributes, set: tlv(0x31, ...attributes) };
}

/** The granted TimeStampResp (DER) of a request and the ECDSA signature over its signed attributes. */
export function grantedResponse(request: TokenRequest, signer: TokenSigner, signature: Buffer): Buffer {
  const { tstInfo, attributes } = signedAttributes(request, signer);
  const signerInfo = seq(
    DER.version1,
    signer.issuerAndSerial,
    algorithmId(OID.sha256),
    tlv(0xa0, ...attributes),
    DER.ecdsaWithSha256,
    tlv(0x04, signature),
  );
  const signedData = seq(
    DER.version3,
    DER.digestAlgorithms,
    seq(DER.tstInfo, tlv(0xa0, tlv(0x04, tstInfo))),
    ...(request.includeCertificate ? [tlv(0xa0, signer.certDer)] : []),
    tlv(0x31, signerInfo),
  );
  return seq(DER.granted, seq(DER.signedData, tlv(0xa0, signedData)));
}

/** RFC 3161 PKIFailureInfo bit numbers. */
export const FAILURE = { badAlg: 0, badRequest: 2, badDataFormat: 5, unacceptedPolicy: 15 } as const;

/** A TimeStampResp with status rejection, a reason text and the failure bit (DER named BIT STRING). */
export function rejection(bit: number, text: string): Buffer {
  const bytes = Buffer.alloc(Math.floor(bit / 8) + 1);
  bytes[Math.floor(bit / 8)] = 0x80 >> (bit % 8);
  const failInfo = tlv(0x03, Buffer.from([7 - (bit % 8)]), bytes);
  const statusString = seq(tlv(0x0c, Buffer.from(text, 'utf8')));
  return seq(seq(int(Buffer.from([2])), statusString, failInfo));
}

/**
 * DER: tag, definite length, contents, written into one buffer: a token is some thirty of these, built
 * for every proof signed and every token answered, so each is one allocation and one copy per part.
 */
function tlv(tag: number, ...contents: Buffer[]): Buffer {
  let n = 0;
  for (const part of contents) n += part.length;
  const head = n < 0x80 ? 2 : n < 0x100 ? 3 : 4;
  const der = Buffer.allocUnsafe(head + n);
  der[0] = tag;
  if (n < 0x80) der[1] = n;
  else if (n < 0x100) [der[1], der[2]] = [0x81, n];
  else [der[1], der[2], der[3]] = [0x82, (n >> 8) & 0xff, n & 0xff];
  let at = head;
  for (const part of contents) {
    der.set(part, at);
    at += part.length;
  }
  return der;
}

const seq = (...contents: Buffer[]): Buffer => tlv(0x30, ...contents);
/** A non-negative INTEGER from big-endian bytes. */
const int = (bytes: Buffer): Buffer => tlv(0x02, positive(bytes));
const OID_CACHE = new Map<string, Buffer>();
function oid(value: string): Buffer {
  let der = OID_CACHE.get(value);
  if (der === undefined) {
    der = Buffer.from(new asn1js.ObjectIdentifier({ value }).toBER());
    OID_CACHE.set(value, der);
  }
  return der;
}
/** SHA-2 AlgorithmIdentifiers carry no parameters (RFC 5754). */
const ALGORITHM_IDS = new Map<string, Buffer>();
function algorithmId(algorithm: string): Buffer {
  let der = ALGORITHM_IDS.get(algorithm);
  if (der === undefined) {
    der = seq(oid(algorithm));
    ALGORITHM_IDS.set(algorithm, der);
  }
  return der;
}
const POLICY_DER = oid(TSA_POLICY);
/** Accuracy ::= SEQUENCE { seconds INTEGER }: one second. */
const ACCURACY_DER = seq(tlv(0x02, Buffer.from([1])));
/** The parts every token has in common, encoded once. */
const DER = {
  version1: int(Buffer.from([1])),
  version3: int(Buffer.from([3])),
  /** PKIStatusInfo { status granted (0) }. */
  granted: seq(int(Buffer.from([0]))),
  digestAlgorithms: tlv(0x31, algorithmId(OID.sha256)),
  ecdsaWithSha256: seq(oid(OID.ecdsaWithSha256)),
  signedData: oid(OID.signedData),
  tstInfo: oid(OID.tstInfo),
  messageDigest: oid(OID.messageDigest),
  contentTypeAttribute: seq(oid(OID.contentType), tlv(0x31, oid(OID.tstInfo))),
};

const SIGNING_CERTIFICATE_ATTRIBUTES = new WeakMap<TokenSigner, Buffer>();
/**
 * SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; an ESSCertIDv2 with the default
 * hash algorithm (SHA-256) is SEQUENCE { certHash OCTET STRING }. The same for every token of a signer.
 */
function signingCertificateAttribute(signer: TokenSigner): Buffer {
  let der = SIGNING_CERTIFICATE_ATTRIBUTES.get(signer);
  if (der === undefined) {
    der = seq(oid(OID.signingCertificateV2), tlv(0x31, seq(seq(seq(tlv(0x04, signer.certHash))))));
    SIGNING_CERTIFICATE_ATTRIBUTES.set(signer, der);
  }
  return der;
}

/**
 * GeneralizedTime in UTC (DER, RFC 3161 §2.4.2): `YYYYMMDDHHMMSSZ` for a time on a whole second,
 * as every new token's is; otherwise with its milliseconds, trailing zeros of the fraction dropped, as in
 * the proof tokens made before (tsa.ts, `TokenTimeFormat`).
 */
function generalizedTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-22T15:30:01.230Z
  const whole = iso.slice(0, 19).replace(/[-:T]/g, '');
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return tlv(0x18, Buffer.from(`${whole}${fraction ? '.' + fraction : ''}Z`, 'ascii'));
}

function sha256(data: Buffer): Buffer {
  return hash('sha256', data, 'buffer');
}

/** Big-endian bytes as a positive DER INTEGER body (a leading zero when the top bit is set). */
function positive(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed;
}
