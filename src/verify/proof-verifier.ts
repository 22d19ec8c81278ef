import { createHash, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { isProofId } from '../core/ids.ts';
import { leafHash, verifyInclusion } from '../core/merkle.ts';
import { signingMessage, type SignedProofFields } from '../core/proof-signature.ts';
import { verifyReceipt } from '../core/receipt.ts';
import { parseTlogProof } from '../core/tlog-proof.ts';
import { openCheckpoint, type LogCheckpoint } from './log-checkpoints.ts';
import {
  checkTimestampToken,
  checkTsaChain,
  parseTimestampToken,
  type TokenParts,
} from './timestamp-token.ts';

/**
 * Whether a proof is good, decided in one place for everyone who asks: the service's verification
 * report, the command line's check of a proof file, and the client library. Pure: it reads nothing and
 * trusts nothing but what it is given, and says what it could not check rather than guessing.
 * docs/verification.md explains each check for a reader who wants to do it by hand.
 */

type CheckStatus = 'valid' | 'invalid' | 'unavailable';

export interface Check {
  status: CheckStatus;
  message: string;
}

/** What a proof document carries that the checks read. */
export interface VerifiableProof extends SignedProofFields {
  signature: string;
  keyId: string;
  receipt: { keyId: string; signature: string } | null;
  /** Where the proof says it stands in the log; an inclusion proof must agree with it. */
  log?: { origin: string; leafIndex: number } | null;
}

/** A receipt key as the key manifest publishes it: its public half and its validity window. */
interface TrustedReceiptKey {
  keyId: string;
  /** A KeyObject, or the base64 DER SubjectPublicKeyInfo of the manifest. */
  publicKey: KeyObject | string;
  validFrom: string;
  validUntil: string | null;
}

/** The keys the checks trust. Whatever is missing makes its check unavailable, never valid. */
export interface Trust {
  receiptKeys: readonly TrustedReceiptKey[];
  /**
   * The TSA certificate and the root that issued it (the trust anchor), or both in PEM, certificate
   * first (as /api/tsa/certs.pem serves them).
   */
  tsa?: { certificate: X509Certificate; root: X509Certificate } | string;
  /** The log's C2SP verifier key (`origin+keyid+base64`). */
  logVerifierKey?: string;
  /** Recomputes the HMAC signature; only the service holds its secret. Undefined for an unknown key. */
  hmac?: (fields: SignedProofFields, signature: string, keyId: string) => boolean | undefined;
}

/** The evidence at hand besides the proof. `null` says it does not exist; undefined, that it is not here. */
export interface Evidence {
  /** `sha256:…` of the content the proof is checked against. */
  contentHash?: string;
  /** The RFC 3161 TimeStampResp (DER), or the parts the checks read (the service's TSA has them). */
  timestampToken?: Buffer | TokenParts | null;
  /**
   * An inclusion proof and the signed checkpoint (C2SP signed note) it leads to, or a C2SP tlog-proof
   * file that holds both.
   */
  inclusion?: { leafIndex: number; hashes: readonly Uint8Array[]; checkpoint: string | null } | string | null;
}

/** Remembers the result of a costly check by a key naming all its inputs (the service keeps a bounded map). */
export type Memo = <T>(key: string, compute: () => T) => T;

export interface VerificationReport {
  /**
   * True only when every check the verdict requires is valid (docs/verification.md, "What verified
   * means"): the format, the receipt and the RFC 3161 token always; the content hash when content was
   * given; the HMAC signature when the verifier holds its key; the inclusion when evidence of it was
   * given. A required check that could not be made is not a pass.
   */
  verified: boolean;
  /** One line per required check that is not valid, naming it: why the proof is not verified. */
  problems: string[];
  signingMessage: string;
  checks: {
    contentHash: Check;
    format: Check;
    signature: Check;
    receipt: Check;
    timestamp: Check;
    inclusion: Check & { leafIndex: number | null; treeSize: number | null };
  };
}

const HMAC_SIGNATURE = /^hmac-sha256:[0-9a-f]{64}$/;
const noMemo: Memo = (_key, compute) => compute();

export function verifyProof(
  proof: VerifiableProof,
  evidence: Evidence,
  trust: Trust,
  memo: Memo = noMemo,
): VerificationReport {
  const message = messageOf(proof);
  const format = formatCheck(proof, message);
  const checks: VerificationReport['checks'] = {
    contentHash: contentHashCheck(proof, evidence.contentHash),
    format,
    signature:
      trust.hmac === undefined
        ? unavailable('An HMAC signature is checked by the service (ask it: hashproof verify --online)')
        : checkSignature(proof, trust.hmac, memo),
    receipt: receiptCheck(proof, message, trust.receiptKeys, memo),
    timestamp: timestampCheck(proof, evidence.timestampToken, trust.tsa, memo),
    inclusion: inclusionCheck(proof, message, evidence.inclusion, trust.logVerifierKey, memo),
  };
  const required = requiredChecks(proof, evidence, trust);
  const problems = (Object.keys(checks) as (keyof typeof checks)[])
    .filter(
      (name) => checks[name].status === 'invalid' || (required.has(name) && checks[name].status !== 'valid'),
    )
    .map((name) => `${name}: ${checks[name].message}`);
  return { verified: problems.length === 0, problems, signingMessage: message, checks };
}

/**
 * The checks the verdict cannot do without, given the proof and what the verifier holds: a check
 * outside this set is reported but does not count, unless it is invalid (evidence that fails always
 * fails the proof).
 */
function requiredChecks(
  proof: VerifiableProof,
  evidence: Evidence,
  trust: Trust,
): Set<keyof VerificationReport['checks']> {
  const required = new Set<keyof VerificationReport['checks']>(['format', 'receipt', 'timestamp']);
  if (evidence.contentHash !== undefined) required.add('contentHash');
  if (trust.hmac !== undefined) required.add('signature');
  // A proof that names its place in the log must prove it; evidence of inclusion must hold when given.
  const claimsPlace = proof.log !== undefined && proof.log !== null;
  if (claimsPlace || (evidence.inclusion !== undefined && evidence.inclusion !== null))
    required.add('inclusion');
  return required;
}

const valid = (message: string): Check => ({ status: 'valid', message });
const invalid = (message: string): Check => ({ status: 'invalid', message });
const unavailable = (message: string): Check => ({ status: 'unavailable', message });

/** The signing message of a well-formed proof; '' for a malformed one (nothing then verifies over it). */
function messageOf(proof: VerifiableProof): string {
  if (
    !isProofId(proof.id) ||
    Number.isNaN(Date.parse(proof.timestamp)) ||
    !HMAC_SIGNATURE.test(proof.signature)
  )
    return '';
  try {
    return signingMessage(proof);
  } catch {
    return '';
  }
}

function formatCheck(proof: VerifiableProof, message: string): Check {
  return message !== '' ? valid('The proof is well formed') : invalid('The proof is malformed');
}

function contentHashCheck(proof: VerifiableProof, contentHash: string | undefined): Check {
  if (contentHash === undefined) return unavailable('No content at hand: the proof is checked on its own');
  return proof.contentHash.toLowerCase() === contentHash.toLowerCase()
    ? valid('The content hashes to the proof’s contentHash')
    : invalid(`The content hashes to ${contentHash}, the proof says ${proof.contentHash}`);
}

/** The HMAC signature, with the service's secret (`hmac`): the one check only the service can make. */
export function checkSignature(
  proof: VerifiableProof,
  hmac: NonNullable<Trust['hmac']>,
  memo: Memo = noMemo,
): Check {
  const { id, timestamp, contentHash, metadataHash, label } = proof;
  const fields = { id, timestamp, contentHash, metadataHash, label };
  const key = ['h', proof.keyId, proof.signature, id, timestamp, contentHash, metadataHash, label].join('\0');
  const isValid = memo(key, () => hmac(fields, proof.signature, proof.keyId));
  if (isValid === undefined)
    return invalid(`The signature's key ${proof.keyId} is not one of the service's keys`);
  return isValid
    ? valid('The HMAC-SHA256 over the signing message matches the stored signature')
    : invalid('The stored signature does not match the proof fields under its key');
}

function receiptCheck(
  proof: VerifiableProof,
  message: string,
  keys: readonly TrustedReceiptKey[],
  memo: Memo,
): Check {
  if (proof.receipt === null) return unavailable('This proof has no public-key receipt');
  const { keyId, signature } = proof.receipt;
  const key = keys.find((k) => k.keyId === keyId);
  if (key === undefined)
    return unavailable(`No public key ${keyId} at hand (see /.well-known/hashproof-keys.json)`);
  const isValid = memo(`r\0${keyId}\0${signature}\0${message}`, () => {
    try {
      const publicKey =
        typeof key.publicKey === 'string'
          ? createPublicKey({ key: Buffer.from(key.publicKey, 'base64'), format: 'der', type: 'spki' })
          : key.publicKey;
      return message !== '' && verifyReceipt(publicKey, message, signature);
    } catch {
      return false;
    }
  });
  if (!isValid) return invalid(`The Ed25519 receipt does not verify with the published key ${keyId}`);
  const isInWindow =
    key.validFrom <= proof.timestamp && (key.validUntil === null || proof.timestamp < key.validUntil);
  return isInWindow
    ? valid(`The Ed25519 receipt verifies with the published key ${keyId}`)
    : invalid(`Key ${keyId} was not valid at ${proof.timestamp}`);
}

function timestampCheck(
  proof: VerifiableProof,
  token: Buffer | TokenParts | null | undefined,
  tsa: Trust['tsa'],
  memo: Memo,
): Check {
  if (token === null) return unavailable('This proof has no RFC 3161 token (made before tokens existed)');
  if (token === undefined) return unavailable('No RFC 3161 token at hand');
  if (tsa === undefined) return unavailable('No TSA certificate and root at hand to check the token with');
  const chain = typeof tsa === 'string' ? parseChain(tsa) : tsa;
  if (chain === undefined) return invalid('The TSA chain is not a certificate followed by its root');
  const hash = Buffer.from(proof.contentHash.toLowerCase().slice('sha256:'.length), 'hex');
  const timestamp = new Date(proof.timestamp);
  const { certificate, root } = chain;
  const problem =
    memo(`c\0${certificate.fingerprint256}\0${root.fingerprint256}`, () =>
      checkTsaChain(certificate, root),
    ) ??
    memo(
      't\0' +
        digestOf([
          Buffer.from(certificate.fingerprint256),
          hash,
          Buffer.from(proof.timestamp),
          ...(Buffer.isBuffer(token)
            ? [token]
            : [token.tstInfo, token.messageDigest, token.signedAttributes, token.signature]),
        ]),
      () => {
        const parts = Buffer.isBuffer(token) ? parseTimestampToken(token) : token;
        return typeof parts === 'string' ? parts : checkTimestampToken(parts, hash, timestamp, certificate);
      },
    );
  return problem === undefined
    ? valid(
        'The RFC 3161 token names this hash and timestamp, and its signature verifies with the TSA certificate',
      )
    : invalid(`The RFC 3161 token does not hold: ${problem}`);
}

function inclusionCheck(
  claimed: VerifiableProof,
  message: string,
  inclusion: Evidence['inclusion'],
  logVerifierKey: string | undefined,
  memo: Memo,
): VerificationReport['checks']['inclusion'] {
  const none = { leafIndex: null, treeSize: null };
  if (inclusion === null)
    return { ...none, ...unavailable('Not in the log yet: new proofs join it within about a second') };
  if (inclusion === undefined) return { ...none, ...unavailable('No inclusion proof at hand') };
  let proof: Exclude<typeof inclusion, string>;
  try {
    proof = typeof inclusion === 'string' ? parseTlogProof(inclusion) : inclusion;
  } catch (error) {
    return { ...none, ...invalid(`The tlog-proof does not parse: ${(error as Error).message}`) };
  }
  const { leafIndex } = proof;
  if (claimed.log != null && claimed.log.leafIndex !== leafIndex)
    return {
      leafIndex,
      treeSize: null,
      ...invalid(
        `The proof says it is entry ${claimed.log.leafIndex}, its inclusion proof is for entry ${leafIndex}`,
      ),
    };
  if (logVerifierKey === undefined)
    return {
      leafIndex,
      treeSize: null,
      ...unavailable('No log verifier key at hand to check the checkpoint with'),
    };
  const note = proof.checkpoint;
  const checkpoint =
    note === null
      ? undefined
      : memo(`n\0${logVerifierKey}\0${note}`, () => openCheckpointIfSigned(note, logVerifierKey));
  if (checkpoint === undefined)
    return { leafIndex, treeSize: null, ...invalid('The checkpoint does not verify with the log key') };
  const treeSize = checkpoint.size;
  if (claimed.log != null && claimed.log.origin !== checkpoint.origin)
    return {
      leafIndex,
      treeSize,
      ...invalid(`The proof names the log ${claimed.log.origin}, its checkpoint is of ${checkpoint.origin}`),
    };
  const isIncluded =
    message !== '' &&
    verifyInclusion(
      leafIndex,
      treeSize,
      leafHash(Buffer.from(message, 'utf8')),
      proof.hashes,
      checkpoint.rootHash,
    );
  return {
    leafIndex,
    treeSize,
    ...(isIncluded
      ? valid(`Leaf ${leafIndex} is included in the signed tree of ${treeSize} entries`)
      : invalid('The inclusion proof does not lead from this proof to the signed root')),
  };
}

/** A memo key naming several inputs at once: SHA-256 over each one's length and bytes. */
function digestOf(inputs: readonly Uint8Array[]): string {
  const hash = createHash('sha256');
  for (const input of inputs) hash.update(`${input.length}:`).update(input);
  return hash.digest('base64');
}

function openCheckpointIfSigned(note: string, vkey: string): LogCheckpoint | undefined {
  try {
    return openCheckpoint(note, vkey);
  } catch {
    return undefined;
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function parseChain(pem: string): { certificate: X509Certificate; root: X509Certificate } | undefined {
  const [certificate, root] = pem.match(PEM_CERTIFICATE) ?? [];
  if (certificate === undefined || root === undefined) return undefined;
  try {
    return { certificate: new X509Certificate(certificate), root: new X509Certificate(root) };
  } catch {
    return undefined;
  }
}
