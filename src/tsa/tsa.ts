import type { SignFn } from '../core/signing.ts';
import {
  createHash,
  createPrivateKey,
  randomBytes,
  sign,
  verify,
  webcrypto,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as asn1js from 'asn1js';
import { IssuerAndSerialNumber } from '@peculiar/asn1-cms';
import { AsnConvert } from '@peculiar/asn1-schema';
import { TimeStampReq } from '@peculiar/asn1-tsp';
import { Certificate } from '@peculiar/asn1-x509';

/**
 * An RFC 3161 time-stamp authority: tokens whose message imprint is the caller's hash and whose
 * genTime is the proof's timestamp, signed with ECDSA P-256 by a certificate that carries the critical
 * timeStamping extended key usage, issued by the service's own root. Keys and certificates are made on
 * first start in SIGNING_KEYS_DIR and kept.
 */

/** The policy of our tokens: an OID under the UUID arc (ITU-T X.667), which needs no registration. */
export const TSA_POLICY = '2.25.311911732591093965693728091516225122863';

const OID = {
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

const HASH_LENGTHS: Record<string, { name: string; length: number }> = {
  [OID.sha256]: { name: 'sha256', length: 32 },
  [OID.sha384]: { name: 'sha384', length: 48 },
  [OID.sha512]: { name: 'sha512', length: 64 },
};

const FILE = 'tsa.json';

interface StoredTsa {
  rootKeyPem: string;
  rootCertPem: string;
  tsaKeyPem: string;
  tsaCertPem: string;
}

export interface TokenRequest {
  /** The hashed message and its algorithm OID (SHA-256 for proofs). */
  hash: Buffer;
  hashAlgorithm?: string;
  genTime: Date;
  /** A positive integer, big-endian; unique per token. */
  serial: Buffer;
  nonce?: Buffer;
  /** Put the TSA certificate in the token (RFC 3161 certReq). */
  includeCertificate: boolean;
}

export class Tsa {
  readonly #key: KeyObject;
  readonly #cert: Certificate;
  readonly #certDer: Buffer;
  readonly #certHash: Buffer;
  readonly #issuerAndSerial: Buffer;
  readonly #tsaName: Buffer;
  readonly certificate: X509Certificate;
  readonly root: X509Certificate;

  private constructor(stored: StoredTsa) {
    this.#key = createPrivateKey(stored.tsaKeyPem);
    this.certificate = new X509Certificate(stored.tsaCertPem);
    this.root = new X509Certificate(stored.rootCertPem);
    this.#certDer = Buffer.from(this.certificate.raw);
    this.#cert = AsnConvert.parse(this.#certDer, Certificate);
    this.#certHash = createHash('sha256').update(this.#certDer).digest();
    const tbs = this.#cert.tbsCertificate;
    this.#issuerAndSerial = Buffer.from(
      AsnConvert.serialize(new IssuerAndSerialNumber({ issuer: tbs.issuer, serialNumber: tbs.serialNumber })),
    );
    // tsa [0] GeneralName: directoryName [4] Name, both explicit (Name is a CHOICE).
    this.#tsaName = tlv(0xa0, tlv(0xa4, Buffer.from(AsnConvert.serialize(tbs.subject))));
  }

  /** Loads the TSA of `dir`, creating its root and certificate on first start. */
  static async open(dir: string, host: string): Promise<Tsa> {
    const file = path.join(dir, FILE);
    try {
      writeFileSync(file, JSON.stringify(await createTsa(host), null, 2) + '\n', { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    return new Tsa(JSON.parse(readFileSync(file, 'utf8')) as StoredTsa);
  }

  /** The TSA certificate followed by its root, PEM. */
  get chainPem(): string {
    return this.certificate.toString() + this.root.toString();
  }

  get keyId(): string {
    return 'tsa-' + this.#certHash.toString('hex').slice(0, 16);
  }

  get publicKey(): KeyObject {
    return this.certificate.publicKey;
  }

  /**
   * Signs a token: returns the ECDSA signature over its signed attributes. Everything else in the token
   * follows from the request, so `token(request, signature)` rebuilds the same token at any time.
   */
  sign(request: TokenRequest): Buffer {
    // DER is Node's encoding for ECDSA signatures; passing the KeyObject alone avoids re-preparing it.
    return sign('sha256', this.#signedAttributes(request).set, this.#key);
  }

  /** `sign`, with the signature made by `signWith` (on the signing thread). */
  signWith(request: TokenRequest, signWith: SignFn): Promise<Buffer> {
    return signWith('sha256', this.#signedAttributes(request).set, this.#key);
  }

  /** The granted TimeStampResp (DER) of a request and its signature. */
  token(request: TokenRequest, signature: Buffer): Buffer {
    const { tstInfo, attributes } = this.#signedAttributes(request);
    const signerInfo = seq(
      int(Buffer.from([1])),
      this.#issuerAndSerial,
      algorithmId(OID.sha256),
      tlv(0xa0, ...attributes),
      seq(oid(OID.ecdsaWithSha256)),
      tlv(0x04, signature),
    );
    const signedData = seq(
      int(Buffer.from([3])),
      tlv(0x31, algorithmId(OID.sha256)),
      seq(oid(OID.tstInfo), tlv(0xa0, tlv(0x04, tstInfo))),
      ...(request.includeCertificate ? [tlv(0xa0, this.#certDer)] : []),
      tlv(0x31, signerInfo),
    );
    return seq(seq(int(Buffer.from([0]))), seq(oid(OID.signedData), tlv(0xa0, signedData)));
  }

  /** A granted TimeStampResp (DER) for the request, signed now. */
  issue(request: TokenRequest): Buffer {
    return this.token(request, this.sign(request));
  }

  /** Does `signature` sign this request's token under the TSA key? */
  verifySignature(request: TokenRequest, signature: Buffer): boolean {
    return verify(
      'sha256',
      this.#signedAttributes(request).set,
      { key: this.publicKey, dsaEncoding: 'der' },
      signature,
    );
  }

  #signedAttributes(request: TokenRequest): { tstInfo: Buffer; attributes: Buffer[]; set: Buffer } {
    const tstInfo = seq(
      int(Buffer.from([1])),
      POLICY_DER,
      seq(algorithmId(request.hashAlgorithm ?? OID.sha256), tlv(0x04, request.hash)),
      int(request.serial),
      generalizedTime(request.genTime),
      ACCURACY_DER,
      ...(request.nonce ? [int(request.nonce)] : []),
      this.#tsaName,
    );
    const attributes = [
      seq(oid(OID.contentType), tlv(0x31, oid(OID.tstInfo))),
      seq(oid(OID.messageDigest), tlv(0x31, tlv(0x04, sha256(tstInfo)))),
      // SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }; an ESSCertIDv2 with the
      // default hash algorithm (SHA-256) is SEQUENCE { certHash OCTET STRING }.
      seq(oid(OID.signingCertificateV2), tlv(0x31, seq(seq(seq(tlv(0x04, this.#certHash)))))),
    ].sort((a, b) => Buffer.compare(a, b)); // DER orders a SET OF by encoding
    return { tstInfo, attributes, set: tlv(0x31, ...attributes) };
  }

  /**
   * Answers an RFC 3161 request (DER TimeStampReq) at `now`: a granted response, or a rejection with
   * the RFC's failure reason for a request it cannot parse or an algorithm it does not take.
   */
  respond(query: Buffer, now: Date): Buffer {
    let request: TimeStampReq;
    try {
      request = AsnConvert.parse(query, TimeStampReq);
    } catch {
      return rejection(FAILURE.badDataFormat, 'the request is not a DER TimeStampReq');
    }
    const algorithm = HASH_LENGTHS[request.messageImprint.hashAlgorithm.algorithm];
    const hash = Buffer.from(request.messageImprint.hashedMessage.buffer);
    if (algorithm === undefined) return rejection(FAILURE.badAlg, 'only SHA-256, SHA-384 and SHA-512');
    if (hash.length !== algorithm.length) return rejection(FAILURE.badDataFormat, 'wrong hash length');
    if (request.reqPolicy !== undefined && request.reqPolicy !== TSA_POLICY) {
      return rejection(FAILURE.unacceptedPolicy, `the policy of this TSA is ${TSA_POLICY}`);
    }
    return this.issue({
      hash,
      hashAlgorithm: request.messageImprint.hashAlgorithm.algorithm,
      genTime: now,
      serial: randomBytes(16),
      ...(request.nonce ? { nonce: Buffer.from(request.nonce) } : {}),
      includeCertificate: request.certReq,
    });
  }
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The token request of a proof: its hash, its timestamp, and its id (a ULID, 128 bits) as serial number. */
export function proofTokenRequest(proof: {
  id: string;
  contentHash: string;
  timestamp: string;
}): TokenRequest {
  let serial = 0n;
  for (const char of proof.id.slice(proof.id.indexOf('_') + 1))
    serial = serial * 32n + BigInt(CROCKFORD.indexOf(char));
  return {
    hash: Buffer.from(proof.contentHash.slice('sha256:'.length), 'hex'),
    genTime: new Date(proof.timestamp),
    serial: Buffer.from(serial.toString(16).padStart(32, '0'), 'hex'),
    includeCertificate: true,
  };
}

/** DER: tag, definite length, contents. */
function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = contents.length === 1 ? contents[0]! : Buffer.concat(contents);
  const n = body.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
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
const algorithmId = (algorithm: string): Buffer => seq(oid(algorithm));
const POLICY_DER = oid(TSA_POLICY);
/** Accuracy ::= SEQUENCE { seconds INTEGER }: one second. */
const ACCURACY_DER = seq(tlv(0x02, Buffer.from([1])));

/** GeneralizedTime in UTC with milliseconds, trailing zeros of the fraction dropped (DER). */
function generalizedTime(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-11-22T15:30:01.230Z
  const whole = iso.slice(0, 19).replace(/[-:T]/g, '');
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return tlv(0x18, Buffer.from(`${whole}${fraction ? '.' + fraction : ''}Z`, 'ascii'));
}

/** RFC 3161 PKIFailureInfo bit numbers. */
export const FAILURE = { badAlg: 0, badRequest: 2, badDataFormat: 5, unacceptedPolicy: 15 } as const;

/** A TimeStampResp with status rejection, a reason text and the failure bit (DER named BIT STRING). */
function rejection(bit: number, text: string): Buffer {
  const bytes = Buffer.alloc(Math.floor(bit / 8) + 1);
  bytes[Math.floor(bit / 8)] = 0x80 >> (bit % 8);
  const failInfo = tlv(0x03, Buffer.from([7 - (bit % 8)]), bytes);
  const statusString = seq(tlv(0x0c, Buffer.from(text, 'utf8')));
  return seq(seq(int(Buffer.from([2])), statusString, failInfo));
}

function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** Big-endian bytes as a positive DER INTEGER body (a leading zero when the top bit is set). */
function positive(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  const trimmed = bytes.subarray(start);
  return (trimmed[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed;
}

async function createTsa(host: string): Promise<StoredTsa> {
  // @peculiar/x509 (certificate generation) needs the Reflect metadata API; it loads on first start only.
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const now = new Date();
  const years = (n: number) => new Date(now.getTime() + n * 365.25 * 86_400_000);
  const serial = () =>
    randomBytes(16)
      .toString('hex')
      .replace(/^[89a-f]/, '1');
  const rootKeys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=hashproof time-stamping root (${host}), O=hashproof`,
    notBefore: now,
    notAfter: years(30),
    keys: rootKeys,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(rootKeys.publicKey),
    ],
  });
  const tsaKeys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const tsa = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=hashproof time-stamping authority (${host}), O=hashproof`,
    issuer: root.subject,
    notBefore: now,
    notAfter: years(20),
    signingKey: rootKeys.privateKey,
    publicKey: tsaKeys.publicKey,
    signingAlgorithm: algorithm,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.timeStamping], true),
      await x509.SubjectKeyIdentifierExtension.create(tsaKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(rootKeys.publicKey),
    ],
  });
  const pem = async (key: webcrypto.CryptoKey) =>
    createPrivateKey({
      key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key)),
      format: 'der',
      type: 'pkcs8',
    })
      .export({ format: 'pem', type: 'pkcs8' })
      .toString();
  return {
    rootKeyPem: await pem(rootKeys.privateKey),
    rootCertPem: root.toString('pem') + '\n',
    tsaKeyPem: await pem(tsaKeys.privateKey),
    tsaCertPem: tsa.toString('pem') + '\n',
  };
}
