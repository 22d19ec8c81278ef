import { createHash, X509Certificate } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { isContentHash } from '../core/hashing.ts';
import { verifyProof, type VerifiableProof } from '../verify/proof-verifier.ts';

/**
 * What checks a proof offline beyond its receipt, saved with it by `hashproof stamp`: the RFC 3161
 * token with the TSA chain, and the C2SP tlog-proof with the log's verifier key.
 */
export interface Evidence {
  /** The TimeStampResp, base64 DER. */
  timestampToken?: string;
  /** The TSA certificate followed by its root, PEM (the root is the trust anchor: compare it). */
  tsaCertificates?: string;
  /** The C2SP tlog-proof file. */
  tlogProof?: string;
  /** The log's C2SP verifier key (compare it with the service's key manifest). */
  logVerifierKey?: string;
}

/** An entry of the service's key manifest (`/.well-known/hashproof-keys.json`). */
export interface PublicKeyEntry {
  keyId: string;
  algorithm: string;
  publicKey: string;
  validFrom: string;
  validUntil: string | null;
}

/** `sha256:` + hex SHA-256 of a file, read as a stream (constant memory, whatever the size). */
export function hashFile(path: string, onProgress?: (bytes: number) => void): Promise<string> {
  return hashStream(createReadStream(path, { highWaterMark: 1 << 20 }), onProgress);
}

/** `sha256:` + hex SHA-256 of everything a stream yields; `onProgress` hears the bytes read so far. */
export async function hashStream(
  stream: AsyncIterable<unknown>,
  onProgress?: (bytes: number) => void,
): Promise<string> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    onProgress?.(bytes);
  }
  return 'sha256:' + hash.digest('hex');
}

export interface OfflineCheck {
  name: string;
  status: 'valid' | 'invalid' | 'unavailable';
  message: string;
}

/** A key of the manifest as the service publishes it, with its use and (for the log) its verifier key. */
export type ManifestKey = PublicKeyEntry & { use?: string; verifierKey?: string };

/**
 * Ties the evidence saved in a proof file to keys the verifier trusts (a copy of the service's key
 * manifest kept apart from the proof, or the manifest fetched from the service). Without it every key
 * would come from the proof file itself, and a forger who replaced all of them would pass. Returns the
 * evidence with the pinned log key in place of the file's, and a `keys` check: invalid when the
 * receipt's key, the file's TSA certificate or its log key is not one the manifest lists.
 */
export function pinKeys(
  manifest: ManifestKey[],
  evidence: Evidence,
  proof?: Pick<VerifiableProof, 'receipt'>,
): { evidence: Evidence; check: OfflineCheck } {
  const name = 'keys';
  const problems: string[] = [];
  const receiptKeyId = proof?.receipt?.keyId;
  if (receiptKeyId !== undefined && !manifest.some((k) => k.keyId === receiptKeyId))
    problems.push(`the receipt key ${receiptKeyId} is not a pinned key`);
  const logKey = manifest.find((k) => k.use === 'log')?.verifierKey;
  if (evidence.logVerifierKey !== undefined && evidence.logVerifierKey !== logKey)
    problems.push('the log key in the proof file is not the pinned log key');
  if (evidence.tsaCertificates !== undefined) {
    try {
      const signer = new X509Certificate(evidence.tsaCertificates).publicKey
        .export({ format: 'der', type: 'spki' })
        .toString('base64');
      if (!manifest.some((k) => k.use === 'tsa' && k.publicKey === signer))
        problems.push('the TSA certificate in the proof file is not a pinned TSA key');
    } catch {
      problems.push('the TSA certificate in the proof file does not parse');
    }
  }
  const pinned: Evidence = { ...evidence, ...(logKey === undefined ? {} : { logVerifierKey: logKey }) };
  return {
    evidence: pinned,
    check:
      problems.length > 0
        ? { name, status: 'invalid', message: problems.join('; ').replace(/^./, (c) => c.toUpperCase()) }
        : { name, status: 'valid', message: 'Every key used is one the pinned key manifest lists' },
  };
}

/**
 * The content a proof is checked against: `{ hash }` (a `sha256:` hash), `{ path }` (a file, hashed as
 * a stream), or a string, which is a hash when it is `sha256:` and 64 hex digits and a file path
 * otherwise (name a file that looks like a hash with `{ path }`).
 */
export type Content = string | { hash: string } | { path: string };

async function contentHashOf(content: Content): Promise<string> {
  if (typeof content === 'string') return isContentHash(content) ? content : hashFile(content);
  return 'hash' in content ? content.hash : hashFile(content.path);
}

/**
 * Checks a proof with nothing but the proof, the content and the service's public keys (the same checks
 * as the service's verification report, docs/verification.md): the content hash matches, the fields form
 * a well-formed signing message, the Ed25519 receipt verifies with a key of the manifest that was valid
 * at the proof's time, and the saved evidence (RFC 3161 token, inclusion in the log) holds. The HMAC
 * signature can only be checked by the service. Rejects when a file cannot be read.
 */
export async function verifyOffline(
  proof: VerifiableProof,
  content: Content,
  keys: PublicKeyEntry[] = [],
  evidence: Evidence = {},
): Promise<OfflineCheck[]> {
  const { checks } = verifyProof(
    proof,
    {
      contentHash: await contentHashOf(content),
      ...(evidence.timestampToken === undefined
        ? {}
        : { timestampToken: Buffer.from(evidence.timestampToken, 'base64') }),
      ...(evidence.tlogProof === undefined ? {} : { inclusion: evidence.tlogProof }),
    },
    {
      receiptKeys: keys,
      ...(evidence.tsaCertificates === undefined ? {} : { tsa: evidence.tsaCertificates }),
      ...(evidence.logVerifierKey === undefined ? {} : { logVerifierKey: evidence.logVerifierKey }),
    },
  );
  return (['contentHash', 'format', 'receipt', 'timestamp', 'inclusion', 'signature'] as const).map(
    (name) => ({
      name,
      status: checks[name].status,
      message: checks[name].message,
    }),
  );
}
