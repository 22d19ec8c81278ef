import { X509Certificate } from 'node:crypto';
import { leadsTo, parseAggregation } from '../core/aggregation.ts';
import { isContentHash } from '../core/hashing.ts';
import { contentHashOf, type Content } from './content-hash.ts';

export { hashFile, hashStream, type Content } from './content-hash.ts';
import { checkAnchors, type ProofAnchors } from '../verify/anchor-checks.ts';
import { verifyProof, type VerifiableProof } from '../verify/proof-verifier.ts';
import { witnessChecks, type WitnessPolicy } from './witness-quorum.ts';
import type { OfflineCheck } from './offline-check.ts';

/**
 * What checks a proof offline beyond its receipt, saved with it by `hashproof stamp`: the RFC 3161
 * token with the TSA chain, and the C2SP tlog-proof with the log's verifier key.
 */
export interface Evidence {
  /** The TimeStampResp, base64 DER. */
  timestampToken?: string;
  /**
   * The TSA certificate followed by its root, PEM. Trusted only when the certificate carries a TSA key
   * of the trusted manifest.
   */
  tsaCertificates?: string;
  /** The C2SP tlog-proof file. */
  tlogProof?: string;
  /** The log's C2SP verifier key, for a reader; the checks use the trusted manifest's log key only. */
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

/**
 * One check of a proof file. `unavailable`: it could not be made (a missing piece, no trusted key), so a
 * check the verdict requires fails the proof; `unchecked`: reported, and not counted as evidence either
 * way (the HMAC offline, an outside root not given, a calendar's pending or unchecked claim).
 */
export type { OfflineCheck } from './offline-check.ts';

/** A key of the manifest as the service publishes it, with its use and (for the log) its verifier key. */
export type ManifestKey = PublicKeyEntry & { use?: string; verifierKey?: string; publicKeyPem?: string };

/**
 * The keys of a key manifest (`{ keys: [...] }`, as /.well-known/hashproof-keys.json serves it), each
 * with the fields trust rests on; a string saying what is wrong when it is not one.
 */
export function manifestKeysOf(value: unknown): ManifestKey[] | string {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) return 'not a key manifest (no "keys" list)';
  const text = (v: unknown) => typeof v === 'string';
  for (const [index, key] of keys.entries()) {
    const k = key as Record<string, unknown> | null;
    if (
      k === null ||
      typeof k !== 'object' ||
      !['keyId', 'algorithm', 'publicKey', 'validFrom'].every((field) => text(k[field])) ||
      !(k.validUntil === null || text(k.validUntil)) ||
      !(k.use === undefined || text(k.use)) ||
      !(k.verifierKey === undefined || text(k.verifierKey))
    )
      return `key ${index} of the manifest lacks keyId, algorithm, publicKey, validFrom or validUntil`;
  }
  return keys as ManifestKey[];
}

/** The keys of a manifest that may sign receipts (a manifest from before `use` existed lists only those). */
const receiptKeys = (keys: readonly ManifestKey[]) =>
  keys.filter((key) => key.use === undefined || key.use === 'receipt');

/** The log's C2SP verifier key in a key manifest, if it names one. */
export function logKeyOf(keys: readonly ManifestKey[]): string | undefined {
  return keys.find((key) => key.use === 'log')?.verifierKey;
}

/** Does a PEM certificate carry one of the manifest's TSA keys? */
function isTrustedTsa(keys: readonly ManifestKey[], pem: string): boolean {
  try {
    const signer = new X509Certificate(pem).publicKey
      .export({ format: 'der', type: 'spki' })
      .toString('base64');
    return keys.some((key) => key.use === 'tsa' && key.publicKey === signer);
  } catch {
    return false;
  }
}

/**
 * Checks a proof with nothing but the proof, the content and the keys the caller trusts (a manifest
 * pinned with --keys, fetched from the service, or remembered for it: never keys the proof file carries),
 * as the service's verification report does (docs/verification.md): the content hash matches, the fields
 * form a well-formed signing message, the Ed25519 receipt verifies with a trusted receipt key valid at
 * the proof's time, the RFC 3161 token verifies with a certificate that carries a trusted TSA key, and a
 * saved inclusion proof leads to a checkpoint signed by the trusted log key. The HMAC signature can only
 * be checked by the service. Each check's status is reported; `verifyProofFile` gives the verdict.
 * Rejects when a file cannot be read.
 */
export async function verifyOffline(
  proof: VerifiableProof,
  content: Content,
  trustedKeys: readonly ManifestKey[] = [],
  evidence: Evidence = {},
): Promise<OfflineCheck[]> {
  return (await offlineReport(proof, content, trustedKeys, evidence)).checks;
}

async function offlineReport(
  proof: VerifiableProof,
  content: Content,
  trustedKeys: readonly ManifestKey[],
  evidence: Evidence,
): Promise<{ checks: OfflineCheck[]; problems: string[] }> {
  const logVerifierKey = logKeyOf(trustedKeys);
  const tsa = evidence.tsaCertificates;
  const report = verifyProof(
    proof,
    {
      contentHash: await contentHashOf(content),
      ...(evidence.timestampToken === undefined
        ? {}
        : { timestampToken: Buffer.from(evidence.timestampToken, 'base64') }),
      ...(evidence.tlogProof === undefined ? {} : { inclusion: evidence.tlogProof }),
    },
    {
      receiptKeys: receiptKeys(trustedKeys),
      ...(tsa !== undefined && isTrustedTsa(trustedKeys, tsa) ? { tsa } : {}),
      ...(logVerifierKey === undefined ? {} : { logVerifierKey }),
    },
  );
  const { checks } = report;
  if (
    evidence.timestampToken !== undefined &&
    tsa !== undefined &&
    checks.timestamp.status === 'unavailable'
  ) {
    const message = 'The TSA certificate in the proof file carries none of the trusted TSA keys';
    report.problems = report.problems.map((line) =>
      line === `timestamp: ${checks.timestamp.message}` ? `timestamp: ${message}` : line,
    );
    checks.timestamp = { status: 'unavailable', message };
  }
  const checkList: OfflineCheck[] = (
    ['contentHash', 'format', 'receipt', 'timestamp', 'inclusion', 'signature'] as const
  ).map((name) => ({ name, status: checks[name].status, message: checks[name].message }));
  // What the verdict does not require is reported as unchecked rather than as a gap.
  for (const check of checkList) {
    if (check.status !== 'unavailable') continue;
    if (check.name === 'signature')
      Object.assign(check, {
        status: 'unchecked',
        message:
          'Only the service can check its HMAC (verify --online); the receipt vouches for the same fields',
      });
    if (check.name === 'inclusion' && evidence.tlogProof === undefined && proof.log == null)
      check.status = 'unchecked';
  }
  return { checks: checkList, problems: report.problems };
}

/**
 * The largest `.ots` file read from a proof file. The service's holds the proof's audit path and each
 * calendar's reply (at most 10,000 bytes each, as the reference client reads them); reading a hostile one
 * costs about 11 ms a KiB, so this keeps a check under half a second.
 */
const MAX_OTS_BYTES = 32 * 1024;
const MAX_OTS_BASE64 = Math.ceil(MAX_OTS_BYTES / 3) * 4;

/** What a proof file holds: the proof, its evidence and, once fetched, its anchors. */
export interface ProofFile {
  proof: VerifiableProof & { id: string; contentHash: string };
  evidence?: Evidence;
  anchors?: ProofAnchors;
}

const SIGNED_TEXT = [
  'id',
  'timestamp',
  'contentHash',
  'label',
  'metadataHash',
  'signature',
  'keyId',
] as const;
const EVIDENCE_TEXT = ['timestampToken', 'tsaCertificates', 'tlogProof', 'logVerifierKey'] as const;

/**
 * A proof file's parts (a whole proof file, or a bare proof document), in the shapes the checks read. A field of the wrong type does not stop the
 * checks: it is replaced by an empty one (which verifies nothing) and named in `malformed`.
 */
export function parseProofFile(document: unknown): { proofFile: ProofFile; malformed?: string } {
  const object = (value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  const whole = object(document) ?? {};
  const proof = { ...(object(whole.proof) ?? whole) };
  const wrong: string[] = [];
  for (const field of SIGNED_TEXT)
    if (typeof proof[field] !== 'string') {
      wrong.push(`proof.${field}`);
      proof[field] = '';
    }
  const receipt = object(proof.receipt);
  if (
    proof.receipt !== null &&
    (typeof receipt?.keyId !== 'string' || typeof receipt.signature !== 'string')
  ) {
    wrong.push('proof.receipt');
    proof.receipt = null;
  }
  const log = object(proof.log);
  if (
    proof.log !== undefined &&
    proof.log !== null &&
    (typeof log?.origin !== 'string' || !Number.isSafeInteger(log.leafIndex))
  ) {
    wrong.push('proof.log');
    proof.log = { origin: '', leafIndex: -1 };
  }
  const evidence = { ...(object(whole.evidence) ?? {}) };
  if (whole.evidence !== undefined && object(whole.evidence) === undefined) wrong.push('evidence');
  for (const field of EVIDENCE_TEXT)
    if (evidence[field] !== undefined && typeof evidence[field] !== 'string') {
      wrong.push(`evidence.${field}`);
      evidence[field] = '';
    }
  const anchors = whole.anchors === undefined ? undefined : anchorsOf(whole.anchors);
  if (anchors === null) wrong.push('anchors');
  return {
    proofFile: {
      proof: proof as unknown as ProofFile['proof'],
      evidence: evidence,
      ...(anchors === undefined ? {} : { anchors: anchors ?? MALFORMED_ANCHORS }),
    },
    ...(wrong.length === 0 ? {} : { malformed: `the proof file is malformed (${wrong.join(', ')})` }),
  };
}

/** Anchors that verify nothing: what a malformed `anchors` part of a proof file is checked as. */
const MALFORMED_ANCHORS: NonNullable<ProofFile['anchors']> = {
  proofId: '',
  treeSize: 0,
  rootHash: '',
  checkpoint: '',
  inclusion: { leafIndex: 0, treeSize: 0, rootHash: '', hashes: [] },
  rfc3161: [],
  opentimestamps: [],
};

/** The anchors part of a proof file when it has the shape the checks read; null otherwise. */
function anchorsOf(value: unknown): ProofFile['anchors'] | null {
  const a = value as Record<string, unknown> | null;
  if (a === null || typeof a !== 'object') return null;
  const inclusion = a.inclusion as Record<string, unknown> | null;
  const isText = (v: unknown) => typeof v === 'string';
  const ok =
    isText(a.proofId) &&
    Number.isSafeInteger(a.treeSize) &&
    isText(a.rootHash) &&
    isText(a.checkpoint) &&
    inclusion !== null &&
    typeof inclusion === 'object' &&
    Number.isSafeInteger(inclusion.leafIndex) &&
    Number.isSafeInteger(inclusion.treeSize) &&
    isText(inclusion.rootHash) &&
    Array.isArray(inclusion.hashes) &&
    inclusion.hashes.every(isText) &&
    Array.isArray(a.rfc3161) &&
    a.rfc3161.every(
      (t: Record<string, unknown>) => t !== null && isText(t.url) && isText(t.genTime) && isText(t.token),
    ) &&
    Array.isArray(a.opentimestamps) &&
    a.opentimestamps.every(
      (o: Record<string, unknown>) => o !== null && isText(o.calendar) && isText(o.status),
    ) &&
    (a.ots === undefined || isText(a.ots));
  return ok ? (a as unknown as ProofFile['anchors']) : null;
}

/** The proof of a proof file (or of a bare proof document), in the shape the checks read. */
export function proofFileOf(document: unknown): ProofFile {
  return parseProofFile(document).proofFile;
}

/**
 * The aggregation check of a proof file that has an `aggregation` part (docs/cli.md, `stamp --aggregate`): the content's
 * digest must lead through the path to the proof's contentHash, the root of the set. The proof's own
 * checks then run on that root when it is reached, on the content's digest otherwise (so they fail
 * too). A malformed part fails closed. Undefined for a proof file of one file.
 */
async function aggregationCheck(
  document: unknown,
  content: Content,
  contentHash: string,
): Promise<{ check: OfflineCheck; content: Content } | undefined> {
  if (document === null || typeof document !== 'object' || !('aggregation' in document)) return undefined;
  const digest = await contentHashOf(content);
  const place = parseAggregation(document.aggregation);
  const check = (status: OfflineCheck['status'], message: string) => ({
    check: { name: 'aggregation', status, message },
    content: { hash: status === 'valid' ? contentHash : digest },
  });
  if (typeof place === 'string') return check('invalid', `The proof file is malformed: ${place}`);
  if (!isContentHash(digest) || !isContentHash(contentHash))
    return check('invalid', "The content's hash or the proof's contentHash is not a sha256: hash");
  const toBytes = (hash: string) => Buffer.from(hash.slice('sha256:'.length), 'hex');
  return leadsTo(toBytes(digest), place, toBytes(contentHash))
    ? check(
        'valid',
        `The content's hash leads through the path of file ${place.index + 1} of ${place.size} to the proof's contentHash`,
      )
    : check(
        'invalid',
        `The content's hash does not lead through the path of file ${place.index + 1} of ${place.size} to the proof's contentHash: another file, or a path from another set`,
      );
}

export interface FileVerdict {
  /** True only when every required piece verified with trusted keys, and every carried piece too. */
  verified: boolean;
  checks: OfflineCheck[];
  /** Why it is not verified: one line per missing or failing piece. */
  problems: string[];
}

/**
 * The verdict on a proof file (docs/verification.md, "What verified means"): verified only when the
 * content hash, the format, the receipt and the RFC 3161 token are valid under `trustedKeys`, and every
 * piece the file carries (inclusion, anchors) verifies too. Anything missing or that could not be checked
 * makes it not verified. Outside roots (`tsaRoots`, `bitcoinHeaders`) let anchors count; without them an
 * anchor is reported as unchecked. With `witnesses`, the checkpoint of its tlog-proof must carry their
 * quorum of cosignatures (witness-quorum.ts).
 */
export async function verifyProofFile(
  document: unknown,
  content: Content,
  trustedKeys: readonly ManifestKey[],
  options: {
    tsaRoots?: X509Certificate[];
    bitcoinHeaders?: Map<number, Buffer>;
    witnesses?: WitnessPolicy;
  } = {},
): Promise<FileVerdict> {
  const { proofFile, malformed } = parseProofFile(document);
  const { proof, evidence = {}, anchors } = proofFile;
  const aggregated = await aggregationCheck(document, content, proof.contentHash);
  const { checks, problems } = await offlineReport(
    proof,
    aggregated?.content ?? content,
    trustedKeys,
    evidence,
  );
  if (aggregated !== undefined) {
    checks.unshift(aggregated.check);
    if (aggregated.check.status !== 'valid') problems.unshift(`aggregation: ${aggregated.check.message}`);
  }
  if (malformed !== undefined) problems.unshift(`format: ${malformed}`);
  if (trustedKeys.length === 0) problems.unshift('keys: no trusted keys');
  if (anchors?.ots !== undefined && anchors.ots.length > MAX_OTS_BASE64) {
    checks.push({
      name: 'anchor opentimestamps',
      status: 'invalid',
      message: `The saved .ots file is over ${MAX_OTS_BYTES} bytes: not read (no genuine one is that large)`,
    });
    problems.push(`anchor opentimestamps: the saved .ots file is over ${MAX_OTS_BYTES} bytes`);
  } else if (anchors !== undefined) {
    const logVerifierKey = logKeyOf(trustedKeys);
    for (const check of checkAnchors(proof, anchors, {
      ...(options.tsaRoots === undefined ? {} : { roots: options.tsaRoots }),
      ...(logVerifierKey === undefined ? {} : { logVerifierKey }),
      ...(options.bitcoinHeaders === undefined ? {} : { bitcoinHeaders: options.bitcoinHeaders }),
    })) {
      checks.push(check);
      if (check.status === 'invalid' || check.status === 'unavailable')
        problems.push(`${check.name}: ${check.message}`);
    }
  }
  for (const check of options.witnesses === undefined
    ? []
    : witnessChecks(evidence.tlogProof, options.witnesses)) {
    checks.push(check);
    if (check.name === 'witnesses' && check.status !== 'valid') problems.push(`witnesses: ${check.message}`);
  }
  return { verified: problems.length === 0, checks, problems };
}
