import {
  defaultStateDir,
  describeCheckpoint,
  HashproofError,
  LogMemory,
  logKeyOf,
  type ConsistencyProver,
  type HashproofClient,
  type ManifestKey,
  type Observation,
} from '../../client/client.ts';
import { parseTlogProof } from '../../core/tlog-proof.ts';
import { escapeControl } from '../output.ts';

/**
 * The command's memory of the logs it talks to (docs/cli.md, "Remembered checkpoints"): every online
 * contact with a log (`stamp`, `verify --online`, `monitor`) checks the log's checkpoint against the
 * largest one seen before, in HASHPROOF_STATE_DIR, and a fork ends the command with exit code 1.
 */

/** The memory in HASHPROOF_STATE_DIR (else `$XDG_STATE_HOME/hashproof`, else `~/.local/state/hashproof`). */
export function logMemory(): LogMemory {
  return new LogMemory(defaultStateDir());
}

/** Consistency proofs from the service; when it gives none, the log is not checked (exit code 3). */
export function proverOf(client: HashproofClient): ConsistencyProver {
  return (from, to) => client.consistency(from, to);
}

/** What the command says when the service served a smaller tree than one it showed before. */
export function olderCheckpoint({ checkpoint, previous }: Observation): string {
  return (
    `the service served an older checkpoint of ${checkpoint.origin} (${describeCheckpoint(checkpoint)}) than the one ` +
    `seen before (${previous === undefined ? 'none' : describeCheckpoint(previous)}); it is consistent with it`
  );
}

/** The checkpoint of a tlog-proof the service answered; one that is none is a malformed answer. */
function checkpointOf(tlogProof: string): string {
  try {
    return parseTlogProof(tlogProof).checkpoint;
  } catch (error) {
    throw new HashproofError(0, 'malformed_answer', `the tlog-proof answered: ${(error as Error).message}`);
  }
}

/**
 * Checks the log's checkpoint in a tlog-proof (the service's latest when there is none) with the log
 * key of `keys` and against the checkpoint remembered, and remembers it when it extends that one.
 * Throws `LogCheckError` (`log fork detected: …`) when it does not; a service without a log key or
 * without a checkpoint yet is not checked.
 */
export async function checkLog(
  client: HashproofClient,
  keys: readonly ManifestKey[],
  tlogProof?: string,
): Promise<Observation | undefined> {
  const verifierKey = logKeyOf(keys);
  if (verifierKey === undefined) return undefined;
  let note = tlogProof === undefined ? undefined : checkpointOf(tlogProof);
  if (note === undefined) {
    try {
      note = await client.checkpoint();
    } catch (error) {
      if (error instanceof HashproofError && error.status === 404) return undefined;
      throw error;
    }
  }
  const observation = await logMemory().observe(note, verifierKey, proverOf(client));
  if (observation.growth === 'older')
    process.stderr.write(`hashproof: ${escapeControl(olderCheckpoint(observation))}\n`);
  return observation;
}
