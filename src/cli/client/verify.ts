import { readFile, stat } from 'node:fs/promises';
import { signingMessage } from '../../core/proof-signature.ts';
import {
  HashproofError,
  hashStream,
  proofFileOf,
  verifyProofFile,
  type HashproofClient,
  type OfflineCheck,
  type ProofFile,
} from '../../client/client.ts';
import { readRoots, saveProofFile } from './anchors.ts';
import { claimedHeights, fetchBitcoinHeaders } from './bitcoin-headers.ts';
import { checkLog } from './log-memory.ts';
import { EXIT, printJson, printSafe, UsageError } from '../output.ts';
import { onlineKeys, pinnedKeys, rememberedKeys, type TrustedKeys } from './trusted-keys.ts';
import { witnessedEvidence, witnessesOf, witnessWaitOf, type WitnessValues } from './witnesses.ts';

/** The largest proof file read: one with its evidence and anchors is a few tens of kilobytes. */
const MAX_PROOF_FILE_BYTES = 4 << 20;

/**
 * `hashproof verify <file> [proof.json]`: the verdict of the one verifier on a proof file, with keys the
 * command trusts (docs/verification.md): pinned by --keys, served by the service under --online (and
 * checked against the ones remembered for it), or remembered for the proof's service. Exit 0 only when
 * the proof is verified; 1 when it is not, with a line that says why.
 */
export async function verify(
  client: HashproofClient,
  args: string[],
  values: VerifyOptions & { json?: boolean },
  timeoutMs = 30_000,
): Promise<number> {
  const verdict = await verdictOf(client, args, values, timeoutMs);
  const { verified, checks, problems } = verdict;
  if (values.json) printJson({ ok: verified, ...verdict });
  else {
    printSafe(`trusted keys: ${verdict.trustedKeys}`);
    for (const c of checks) printSafe(`${MARK[c.status]} ${c.name}: ${c.message}`);
    printSafe(
      verified
        ? 'verified: every required check holds with trusted keys'
        : `not verified: ${problems.join('; ')}`,
    );
  }
  return verified ? EXIT.ok : EXIT.failed;
}

/** How `verify` checks: the keys it trusts, whether it asks the service, the outside roots of anchors. */
export interface VerifyOptions extends WitnessValues {
  online?: boolean;
  keys?: string;
  'tsa-roots'?: string;
  'bitcoin-headers'?: string;
}

/** The verdict of `verify`, as `--json` prints it (and the `verify_file` tool answers it). */
export interface Verdict {
  verified: boolean;
  proofId: string;
  trustedKeys: string;
  checks: OfflineCheck[];
  problems: string[];
}

/**
 * The verdict on a file (or `-` and a proof file) and its proof file, printing nothing: what `verify`
 * prints, and what an agent's tool answers.
 */
export async function verdictOf(
  client: HashproofClient,
  [file, proofFile]: string[],
  values: VerifyOptions,
  timeoutMs = 30_000,
): Promise<Verdict> {
  if (file === undefined) throw new UsageError('verify needs a file, or - and a proof file');
  const witnesses = witnessesOf(values);
  const witnessWaitMs = witnessWaitOf(values);
  const headersUrl = values['bitcoin-headers'];
  if (headersUrl !== undefined && !(/^https?:\/\//.test(headersUrl) && URL.canParse(headersUrl)))
    throw new UsageError(
      `--bitcoin-headers must be the http(s) address of an Esplora-compatible API; got "${headersUrl}"`,
    );
  if (file === '-') {
    // Standard input has no name to find its proof file by: it must be named.
    if (proofFile === undefined)
      throw new UsageError(
        'verify - reads the content from standard input: name its proof file (hashproof verify - <proof.json>)',
      );
  } else if (
    !(await stat(file).then(
      (info) => info.isFile(),
      () => false,
    ))
  )
    throw new UsageError(`no such file: ${file} (verify checks a file against its proof)`);
  const path = proofFile ?? `${file}.proof.json`;
  const document = await readProofFile(path, proofFile === undefined ? file : undefined);
  const roots = values['tsa-roots'] === undefined ? undefined : await readRoots(values['tsa-roots']);
  const read = proofFileOf(document);
  const trusted = await trustedKeys(client, values, document);
  // The service's log must still extend every checkpoint of it seen before (docs/cli.md).
  if (values.online) await checkLog(client, trusted.keys);
  const fetched = values.online ? await client.anchors(read.proof.id) : undefined;
  // With witnesses, --online brings the file's checkpoint up to the log's latest cosigned one.
  // A file written before its proof joined the log names no place there: the service's record does.
  const placed =
    values.online && witnesses !== undefined && !read.evidence?.tlogProof && read.proof.log == null
      ? { ...read.proof, log: (await storedProof(client, read.proof.id))?.log ?? null }
      : read.proof;
  const witnessed =
    values.online && witnesses !== undefined
      ? await witnessedEvidence(client, placed, read.evidence ?? {}, trusted.keys, witnesses, {
          waitMs: witnessWaitMs,
          latest: true,
        })
      : undefined;
  const broughtUp =
    witnessed !== undefined && witnessed.evidence.tlogProof !== read.evidence?.tlogProof
      ? witnessed.evidence
      : undefined;
  const candidate =
    fetched === undefined && broughtUp === undefined
      ? document
      : {
          ...(document as object),
          ...(fetched === undefined ? {} : { anchors: fetched }),
          ...(broughtUp === undefined
            ? {}
            : { evidence: { ...(document as { evidence?: object }).evidence, ...broughtUp } }),
        };
  const content = file === '-' ? { hash: await hashStream(process.stdin) } : { path: file };
  const bitcoinHeaders =
    headersUrl === undefined
      ? undefined
      : await fetchBitcoinHeaders(headersUrl, claimedHeights(proofFileOf(candidate).anchors), timeoutMs);
  const verdict = await verifyProofFile(candidate, content, trusted.keys, {
    ...(roots === undefined ? {} : { tsaRoots: roots }),
    ...(bitcoinHeaders === undefined ? {} : { bitcoinHeaders }),
    ...(witnesses === undefined ? {} : { witnesses }),
  });
  const { checks, problems } = verdict;
  if (fetched === undefined && read.anchors === undefined)
    checks.push({
      name: 'anchors',
      status: 'unchecked',
      message: values.online
        ? 'No anchored checkpoint holds this proof yet (or the service anchors nothing): try again later'
        : 'None saved in the proof file: hashproof verify --online fetches them once a checkpoint holding the proof is anchored',
    });
  if (values.online) {
    const signature = await serviceConfirms(client, read.proof);
    checks.splice(
      checks.findIndex((c) => c.name === 'signature'),
      1,
      signature,
    );
    if (signature.status !== 'valid') problems.push(`signature: ${signature.message}`);
  }
  if (witnessed?.problem !== undefined && problems.some((line) => line.startsWith('witnesses:'))) {
    checks.push({ name: 'witnesses online', status: 'unavailable', message: witnessed.problem });
    problems.push(`witnesses online: ${witnessed.problem}`);
  }
  const verified = problems.length === 0;
  if (fetched !== undefined || broughtUp !== undefined) {
    // Anchors and a checkpoint from the service are written into the proof file only when the whole
    // file verifies with them: a service that lies can fail a check, never spoil a good proof file.
    if (verified) await saveProofFile(path, candidate as object);
    else
      problems.push(
        `the ${fetched === undefined ? 'checkpoint' : 'anchors'} the service sent ${fetched === undefined ? 'was' : 'were'} not saved: ${path} is left as it was`,
      );
  }
  return { verified, proofId: read.proof.id, trustedKeys: trusted.source, checks, problems };
}

const MARK: Record<OfflineCheck['status'], string> = {
  valid: 'ok  ',
  invalid: 'FAIL',
  unavailable: 'MISS',
  unchecked: 'skip',
};

async function trustedKeys(
  client: HashproofClient,
  values: { online?: boolean; keys?: string },
  document: unknown,
): Promise<TrustedKeys> {
  if (values.keys !== undefined) return pinnedKeys(values.keys);
  if (values.online) return onlineKeys(client);
  // The service the proof file names (stamp writes it), else the one the command is pointed at.
  const service = (document as { service?: unknown } | null)?.service;
  return rememberedKeys(
    typeof service === 'string' && /^https?:\/\//.test(service) && URL.canParse(service)
      ? service
      : client.baseUrl,
  );
}

/** The service's record of a proof; undefined when it has none (the verdict then says so). */
async function storedProof(client: HashproofClient, id: string): Promise<ProofFile['proof'] | undefined> {
  try {
    return (await client.getProof(id)).proof;
  } catch (error) {
    if (error instanceof HashproofError && error.status === 404) return undefined;
    throw error;
  }
}

/** The service vouches for its stored proof: the file must be that proof, field for field. */
async function serviceConfirms(client: HashproofClient, proof: ProofFile['proof']): Promise<OfflineCheck> {
  const name = 'signature';
  try {
    const report = await client.verify(proof.id);
    const stored = (await client.getProof(proof.id)).proof;
    const matches =
      report.verified &&
      stored.signature === proof.signature &&
      signingMessage(stored) === signingMessage(proof);
    return matches
      ? { name, status: 'valid', message: 'The service confirms the signature' }
      : { name, status: 'invalid', message: 'The service does not confirm this proof' };
  } catch (error) {
    if (error instanceof HashproofError && error.status === 404)
      return { name, status: 'invalid', message: 'The service has no such proof' };
    if (error instanceof HashproofError) throw error;
    return { name, status: 'invalid', message: 'The service does not confirm this proof' };
  }
}

/** The proof file's JSON; a missing, unreadable or oversized one is a usage error that names it. */
async function readProofFile(path: string, besideFile: string | undefined): Promise<unknown> {
  let text: string;
  try {
    if ((await stat(path)).size > MAX_PROOF_FILE_BYTES)
      throw new UsageError(`${path} is over ${MAX_PROOF_FILE_BYTES >> 20} MiB: not a proof file`);
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new UsageError(
      missing
        ? `no proof file ${path}${besideFile === undefined ? '' : ` (hashproof stamp ${besideFile} writes it; or name the proof file after the file)`}`
        : `cannot read the proof file ${path}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${path} is not a proof file (not JSON)`);
  }
}
