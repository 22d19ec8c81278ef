import { readFile } from 'node:fs/promises';
import {
  awaitCosigned,
  bringUp,
  countCosignatures,
  describeCount,
  LogCheckError,
  logKeyOf,
  proofFileOf,
  witnessPolicy,
  writeFileAtomic,
  WitnessPolicyError,
  type Evidence,
  type HashproofClient,
  type ManifestKey,
  type ProofFile,
  type WitnessPolicy,
} from '../../client/client.ts';
import { parseTlogProof } from '../../core/tlog-proof.ts';
import { escapeControl, UsageError } from '../output.ts';
import { logMemory, proverOf } from './log-memory.ts';

/**
 * `--witness <verifier key>`… `--witness-quorum N` `--witness-wait S` of `stamp`, `verify` and `monitor`
 * (docs/cli.md, "Witnesses"): the checkpoint a proof leads to counts only when the quorum of the given
 * witnesses cosigned it (C2SP tlog-cosignature).
 */

export interface WitnessValues {
  witness?: string[];
  'witness-quorum'?: string;
  'witness-wait'?: string;
}

/** How long `stamp` and `verify --online` wait by default for the witnesses' quorum. */
export const DEFAULT_WITNESS_WAIT_MS = 30_000;

/**
 * The witnesses of quorum not reached in time: the proof is made, and its file written, but its
 * checkpoint is not yet cosigned as required. Exit code 3: the check could not be made yet.
 */
export class WitnessQuorumError extends Error {}

/** The witnesses required by the options, or undefined when none; a usage error when they are wrong. */
export function witnessesOf(values: WitnessValues): WitnessPolicy | undefined {
  const wait = values['witness-wait'];
  if (wait !== undefined && (values.witness ?? []).length === 0)
    throw new UsageError('--witness-wait needs --witness <verifier key>');
  try {
    const policy = witnessPolicy(values.witness ?? [], values['witness-quorum']);
    return policy.witnesses.length === 0 ? undefined : policy;
  } catch (error) {
    if (error instanceof WitnessPolicyError) throw new UsageError(error.message);
    throw error;
  }
}

/** `--witness-wait <seconds>`: 0 to 3600, default 30. */
export function witnessWaitOf(values: WitnessValues): number {
  const raw = values['witness-wait'];
  if (raw === undefined) return DEFAULT_WITNESS_WAIT_MS;
  const seconds = Number(raw);
  if (!/^\d+$/.test(raw) || seconds > 3600)
    throw new UsageError(`--witness-wait takes whole seconds from 0 to 3600, got ${JSON.stringify(raw)}`);
  return seconds * 1000;
}

/** The count of the witnesses on a tlog-proof's checkpoint; undefined when there is none to read. */
function countOf(tlogProof: string | undefined, policy: WitnessPolicy) {
  if (tlogProof === undefined) return undefined;
  try {
    const note = parseTlogProof(tlogProof).checkpoint;
    return { note, count: countCosignatures(note, policy) };
  } catch {
    return undefined;
  }
}

/** A proof and its tlog-proof, as `stamp` made it or a proof file holds it. */
interface Item {
  proof: ProofFile['proof'];
  tlogProof: string | undefined;
}

/**
 * Tlog-proofs whose checkpoint the witnesses' quorum cosigned, one per item (undefined: keep its own).
 * When an item's checkpoint lacks the quorum (or, with `latest`, always, in one look), the log's
 * checkpoint is read again until it holds every item and carries the quorum, for at most `waitMs`, and
 * the items' tlog-proofs are brought up to it (its consistency with theirs and their inclusion checked).
 * `problem` says why the quorum is not met when it is not. A line of a required witness that does not
 * verify throws `LogCheckError` (on an item's own checkpoint, only without `latest`: `verify` reports it).
 */
export async function cosignedTlogProofs(
  client: HashproofClient,
  items: readonly Item[],
  keys: readonly ManifestKey[],
  policy: WitnessPolicy,
  options: { waitMs: number; latest?: boolean },
): Promise<{ tlogProofs: (string | undefined)[]; problem?: string }> {
  const kept = { tlogProofs: items.map(() => undefined) };
  const logKey = logKeyOf(keys);
  if (logKey === undefined)
    return { ...kept, problem: 'the key manifest names no log key: no checkpoint can be counted' };
  const toBringUp: Item[] = [];
  const leafIndexes: number[] = [];
  const outside: Item[] = [];
  for (const item of items) {
    const held = countOf(item.tlogProof, policy);
    if (held !== undefined && (held.count.bad.length > 0 || held.count.malformed !== undefined)) {
      if (options.latest) continue;
      throw new LogCheckError(
        'checkpoint',
        `log checkpoint rejected: ${describeCount(held.count, held.note)}`,
      );
    }
    if (held?.count.met === true && !options.latest) continue;
    const leafIndex = leafIndexOf(item);
    if (leafIndex === undefined) outside.push(item);
    else {
      toBringUp.push(item);
      leafIndexes.push(leafIndex);
    }
  }
  // A proof not in the log yet has no checkpoint to be cosigned: the others are still brought up.
  const notInLog =
    outside.length === 0
      ? undefined
      : `proof ${outside[0]!.proof.id}${outside.length > 1 ? ` and ${outside.length - 1} more` : ''} not in the log yet: no checkpoint holds it to be cosigned`;
  if (toBringUp.length === 0) return notInLog === undefined ? kept : { ...kept, problem: notInLog };
  // Whether every item already meets the quorum (then one look for a later checkpoint, no wait).
  const allMet = toBringUp.every((item) => countOf(item.tlogProof, policy)?.count.met === true);
  const memory = logMemory();
  let told = '';
  const wait = await awaitCosigned({
    read: () => client.witnessedCheckpoint(policy.quorum),
    logKey,
    policy,
    waitMs: allMet ? 0 : options.waitMs,
    minSize: Math.max(...leafIndexes) + 1,
    observe: async (note) => void (await memory.observe(note, logKey, proverOf(client))),
    onWait: ({ checkpoint, count }, waitedMs) => {
      const what =
        checkpoint.size > Math.max(...leafIndexes)
          ? describeCount(count, checkpoint.note)
          : `the log's checkpoint (size ${checkpoint.size}) does not hold the proof yet`;
      if (what === told) return;
      told = what;
      process.stderr.write(
        `hashproof: ${escapeControl(`waiting for the witnesses (at most ${options.waitMs / 1000} s, ${Math.round(waitedMs / 1000)} s so far): ${what}`)}\n`,
      );
    },
  });
  if (!wait.met) {
    if (allMet) return notInLog === undefined ? kept : { ...kept, problem: notInLog };
    const { checkpoint, count } = wait.last;
    const what = wait.last.count.met
      ? `the log's checkpoint (size ${checkpoint.size}) does not hold the proof yet`
      : describeCount(count, checkpoint.note);
    return {
      ...kept,
      problem: `the witnesses' quorum was not reached within ${options.waitMs / 1000} s: ${what}`,
    };
  }
  const target = wait.last.checkpoint;
  const brought = await bringUp(
    { consistency: (from, to) => client.consistency(from, to), tile: (...at) => client.tile(...at) },
    toBringUp,
    target,
    logKey,
  );
  const tlogProofs = items.map((item) => {
    const at = toBringUp.indexOf(item);
    return at < 0 ? undefined : brought[at];
  });
  const failed = toBringUp.filter(
    (item, at) => brought[at] === undefined && countOf(item.tlogProof, policy)?.count.met !== true,
  );
  const problem =
    failed.length > 0
      ? `the log's cosigned checkpoint (size ${target.size}) cannot replace the checkpoint of proof ${failed[0]!.proof.id}: its place in the log is not where the log's tiles have it`
      : notInLog;
  return problem === undefined ? { tlogProofs } : { tlogProofs, problem };
}

/** The proof's place in the log: its tlog-proof's index, else the one the proof names. */
function leafIndexOf({ proof, tlogProof }: Item): number | undefined {
  try {
    return parseTlogProof(tlogProof ?? '').leafIndex;
  } catch {
    return proof.log?.leafIndex ?? undefined;
  }
}

/** A proof's evidence with a tlog-proof the witnesses' quorum cosigned (see `cosignedTlogProofs`). */
export async function witnessedEvidence(
  client: HashproofClient,
  proof: ProofFile['proof'],
  evidence: Evidence,
  keys: readonly ManifestKey[],
  policy: WitnessPolicy,
  options: { waitMs: number; latest?: boolean },
): Promise<{ evidence: Evidence; problem?: string }> {
  const { tlogProofs, problem } = await cosignedTlogProofs(
    client,
    [{ proof, tlogProof: evidence.tlogProof }],
    keys,
    policy,
    options,
  );
  const [tlogProof] = tlogProofs;
  return {
    evidence: tlogProof === undefined ? evidence : { ...evidence, tlogProof },
    ...(problem === undefined ? {} : { problem }),
  };
}

/**
 * Brings proof files already written (`stamp` of many files) up to one checkpoint the witnesses'
 * quorum cosigned, rewriting those that change (atomically). Answers why the quorum is not met, if not.
 */
export async function witnessProofFiles(
  client: HashproofClient,
  files: readonly string[],
  keys: readonly ManifestKey[],
  { policy, waitMs }: { policy: WitnessPolicy; waitMs: number },
): Promise<string | undefined> {
  const documents = await Promise.all(
    files.map(async (file) => JSON.parse(await readFile(file, 'utf8')) as { evidence?: Evidence }),
  );
  const items = documents.map((document) => {
    const { proof, evidence } = proofFileOf(document);
    return { proof, tlogProof: evidence?.tlogProof };
  });
  const { tlogProofs, problem } = await cosignedTlogProofs(client, items, keys, policy, { waitMs });
  for (const [at, tlogProof] of tlogProofs.entries()) {
    if (tlogProof === undefined) continue;
    const document = documents[at]!;
    const updated = { ...document, evidence: { ...document.evidence, tlogProof } };
    await writeFileAtomic(files[at]!, JSON.stringify(updated, null, 2) + '\n');
  }
  return problem;
}
