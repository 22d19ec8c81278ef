import { createHash } from 'node:crypto';
import { verifyConsistency } from '../core/merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';

/**
 * Whether two checkpoints of one log can both be true: the smaller tree must be a prefix of the larger
 * (RFC 9162 §2.1.4), shown by a consistency proof between them. A log that showed one party a tree and
 * another party (or the same one later) a tree that does not extend it has forked: it rewrote history.
 * Pure: the proof is fetched by the caller.
 */

/** A checkpoint of a log: its body and the signed note it came in. */
export interface LogCheckpoint {
  origin: string;
  size: number;
  rootHash: Buffer;
  /** The C2SP signed note, verbatim. */
  note: string;
}

/** Opens a signed checkpoint with the log's C2SP verifier key; throws, saying why, when it does not verify. */
export function openCheckpoint(note: string, verifierKey: string): LogCheckpoint {
  const { origin, size, rootHash } = parseCheckpoint(openNote(note, parseVerifierKey(verifierKey)));
  return { origin, size, rootHash, note };
}

/** The body of a signed checkpoint that was opened before (kept by its verifier), without its signature. */
export function readCheckpoint(note: string): LogCheckpoint {
  const { origin, size, rootHash } = parseCheckpoint(note.slice(0, note.lastIndexOf('\n\n') + 1));
  return { origin, size, rootHash, note };
}

/** `origin` at size N with root R, as a person reads a checkpoint. */
export function describeCheckpoint({ size, rootHash }: LogCheckpoint): string {
  return `size ${size}, root ${rootHash.toString('base64')}`;
}

export type Comparison =
  { consistent: true; growth: 'same' | 'grew' | 'older' } | { consistent: false; reason: string };

const EMPTY_ROOT = createHash('sha256').digest();

/**
 * Compares a checkpoint seen before (`known`) with a new one (`fresh`) of the same log. `proof` is the
 * consistency proof from the smaller tree to the larger one (none is needed for equal sizes or an empty
 * tree); undefined when the log could not give one, which for different trees means they do not agree.
 */
export function compareCheckpoints(
  known: LogCheckpoint,
  fresh: LogCheckpoint,
  proof: readonly Uint8Array[] | undefined,
): Comparison {
  if (known.origin !== fresh.origin)
    return {
      consistent: false,
      reason: `they are checkpoints of two logs (${known.origin}, ${fresh.origin})`,
    };
  const growth = fresh.size === known.size ? 'same' : fresh.size > known.size ? 'grew' : 'older';
  const [smaller, larger] = growth === 'older' ? [fresh, known] : [known, fresh];
  if (growth === 'same')
    return known.rootHash.equals(fresh.rootHash)
      ? { consistent: true, growth }
      : { consistent: false, reason: 'they name two different trees of the same size' };
  if (smaller.size === 0)
    return smaller.rootHash.equals(EMPTY_ROOT)
      ? { consistent: true, growth }
      : { consistent: false, reason: 'the empty tree has another root' };
  if (proof === undefined)
    return {
      consistent: false,
      reason: `the log gives no consistency proof from size ${smaller.size} to ${larger.size}`,
    };
  return verifyConsistency(smaller.size, larger.size, smaller.rootHash, larger.rootHash, proof)
    ? { consistent: true, growth }
    : {
        consistent: false,
        reason: `the consistency proof from size ${smaller.size} to ${larger.size} does not verify`,
      };
}
