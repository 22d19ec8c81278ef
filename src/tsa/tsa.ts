import type { SignFn } from '../core/signing.ts';
import type { TokenParts } from '../verify/timestamp-token.ts';
import { createPrivateKey, randomBytes, sign, webcrypto, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { TimeStampReq } from '@peculiar/asn1-tsp';
import {
  FAILURE,
  grantedResponse,
  HASH_LENGTHS,
  OID,
  rejection,
  signedAttributes,
  tokenSigner,
  TSA_POLICY,
  type TokenRequest,
  type TokenSigner,
} from './tsa-token.ts';

/**
 * A TimeStampReq is about 100 bytes (an imprint, a nonce, a policy); decoding DER costs time on the
 * thread that serves every request (128 KiB of it took 100 ms, 4 KiB up to 13 ms), so a query may take at most this much.
 */
export const TSA_QUERY_MAX_BYTES = 1024;

/**
 * An RFC 3161 time-stamp authority: tokens whose message imprint is the caller's hash and whose
 * genTime is the proof's timestamp rounded up to the whole second (`proofTokenRequest`), signed with
 * ECDSA P-256 by a certificate that carries the critical timeStamping extended key usage, issued by the
 * service's own root. Keys and certificates are made on first start in SIGNING_KEYS_DIR and kept. The
 * DER of the tokens is built in tsa-token.ts.
 */

const FILE = 'tsa.json';

interface StoredTsa {
  rootKeyPem: string;
  rootCertPem: string;
  tsaKeyPem: string;
  tsaCertPem: string;
}

export class Tsa {
  readonly #key: KeyObject;
  readonly #signer: TokenSigner;
  readonly certificate: X509Certificate;
  readonly root: X509Certificate;

  private constructor(stored: StoredTsa) {
    this.#key = createPrivateKey(stored.tsaKeyPem);
    this.certificate = new X509Certificate(stored.tsaCertPem);
    this.root = new X509Certificate(stored.rootCertPem);
    this.#signer = tokenSigner(Buffer.from(this.certificate.raw));
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

  /** Loads the TSA of `dir` without creating one; undefined when the directory has none. */
  static load(dir: string): Tsa | undefined {
    let text;
    try {
      text = readFileSync(path.join(dir, FILE), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    return new Tsa(JSON.parse(text) as StoredTsa);
  }

  /** The TSA certificate followed by its root, PEM. */
  get chainPem(): string {
    return this.certificate.toString() + this.root.toString();
  }

  get keyId(): string {
    return 'tsa-' + this.#signer.certHash.toString('hex').slice(0, 16);
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
    return sign('sha256', signedAttributes(request, this.#signer).set, this.#key);
  }

  /** `sign`, with the signature made by `signWith` (on the signing thread). */
  signWith(request: TokenRequest, signWith: SignFn): Promise<Buffer> {
    return signWith('sha256', signedAttributes(request, this.#signer).set, this.#key);
  }

  /** The granted TimeStampResp (DER) of a request and its signature. */
  token(request: TokenRequest, signature: Buffer): Buffer {
    return grantedResponse(request, this.#signer, signature);
  }

  /**
   * The parts of the token `token(request, signature)` would give, as a verifier reads them
   * (verify/timestamp-token.ts), taken from what builds the token rather than parsed back out of it.
   */
  tokenParts(request: TokenRequest, signature: Buffer): TokenParts {
    const { tstInfo, digest, set } = signedAttributes(request, this.#signer);
    return {
      imprintAlgorithm: request.hashAlgorithm ?? OID.sha256,
      imprint: request.hash,
      genTime: request.genTime,
      tstInfo,
      messageDigest: digest,
      signedAttributes: set,
      signature,
    };
  }

  /** A granted TimeStampResp (DER) for the request, signed now. */
  issue(request: TokenRequest): Buffer {
    return this.token(request, this.sign(request));
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
      genTime: wholeSecondUp(now),
      serial: randomBytes(16),
      ...(request.nonce ? { nonce: Buffer.from(request.nonce) } : {}),
      includeCertificate: request.certReq,
    });
  }
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * How a proof's token writes its genTime (docs/decisions.md, "Whole-second genTime in time-stamp
 * tokens"). `seconds`: the proof's timestamp rounded up to the whole second, written without a fraction
 * (`YYYYMMDDHHMMSSZ`), which every common RFC 3161 verifier reads; every new token. `millis`: the
 * timestamp itself with its milliseconds (DER drops trailing zeros of the fraction), the form of the
 * tokens made before; kept so that their tokens are rebuilt byte for byte from their stored signature.
 */
export type TokenTimeFormat = 'seconds' | 'millis';

/**
 * The token request of a proof: its hash, its timestamp written in `format`, and its id (a ULID,
 * 128 bits) as serial number.
 */
export function proofTokenRequest(
  proof: { id: string; contentHash: string; timestamp: string },
  format: TokenTimeFormat,
): TokenRequest {
  const timestamp = new Date(proof.timestamp);
  return {
    hash: Buffer.from(proof.contentHash.slice('sha256:'.length), 'hex'),
    genTime: format === 'seconds' ? wholeSecondUp(timestamp) : timestamp,
    serial: serialOf(proof.id.slice(proof.id.indexOf('_') + 1)),
    includeCertificate: true,
  };
}

/**
 * The 16 bytes of a ULID (26 Crockford base-32 digits, 130 bits of which the first two are zero), read
 * 5 bits at a time. Anything else (a first digit above 7, an unknown digit) goes the general way, as
 * before: a big integer written in 32 hex digits at least.
 */
function serialOf(ulid: string): Buffer {
  const first = CROCKFORD.indexOf(ulid[0] ?? '');
  if (ulid.length === 26 && first >= 0 && first < 8) {
    const bytes = Buffer.alloc(16);
    let [value, bits, at] = [first, 3, 0];
    for (let i = 1; i < 26; i++) {
      const digit = CROCKFORD.indexOf(ulid[i]!);
      if (digit < 0) return bigSerial(ulid);
      value = (value << 5) | digit;
      bits += 5;
      if (bits >= 8) {
        bits -= 8;
        bytes[at++] = value >> bits;
        value &= (1 << bits) - 1;
      }
    }
    return bytes;
  }
  return bigSerial(ulid);
}

function bigSerial(digits: string): Buffer {
  let serial = 0n;
  for (const char of digits) serial = serial * 32n + BigInt(CROCKFORD.indexOf(char));
  return Buffer.from(serial.toString(16).padStart(32, '0'), 'hex');
}

/**
 * The first whole second at or after `time`: never earlier than the truth, and within the token's
 * accuracy (one second). A time without milliseconds is written with no fraction (tsa-token.ts).
 */
function wholeSecondUp(time: Date): Date {
  return new Date(Math.ceil(time.getTime() / 1000) * 1000);
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
