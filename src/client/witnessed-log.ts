import { leafHash, verifyInclusion } from '../core/merkle.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { formatTlogProof, parseTlogProof } from '../core/tlog-proof.ts';
import {
  compareCheckpoints,
  describeCheckpoint,
  openCheckpoint,
  type LogCheckpoint,
} from '../verify/log-checkpoints.ts';
import type { TileReader } from './log-audit.ts';
import { LogCheckError, LogUncheckedError } from './log-memory.ts';
import type { ProofFile } from './offline.ts';
import { TileLog } from './stamp-many-log.ts';
import { countCosignatures, describeCount, type WitnessCount, type WitnessPolicy } from './witness-quorum.ts';

/**
 * Checkpoints cosigned by the witnesses a client requires, from the service (docs/cli.md, "Witnesses"):
 * waiting, within a bound, for the log's checkpoint to carry their quorum, and bringing a proof's
 * tlog-proof up to such a checkpoint (its consistency with the one the proof had, and the proof's
 * inclusion in it, both checked here).
 */

/** The log's checkpoint with its count of cosignatures. */
export interface CountedCheckpoint {
  checkpoint: LogCheckpoint;
  count: WitnessCount;
}

export interface CosignedWait {
  /** The log's checkpoint note (`/log/checkpoint`), cosignatures and all. */
  read: () => Promise<string>;
  logKey: string;
  policy: WitnessPolicy;
  /** The longest wait for the quorum, in milliseconds (0: one look). */
  waitMs: number;
  /** The least tree size that counts (a new proof must be in the tree). */
  minSize?: number;
  /** Hears each new checkpoint once its log signature verifies (the log memory checks it). */
  observe?: (note: string) => Promise<void>;
  /** Told while waiting: the checkpoint seen and its count. */
  onWait?: (seen: CountedCheckpoint, waitedMs: number) => void;
}

/**
 * Reads the log's checkpoint, again and again (every 0.5 s, growing to 5 s) for at most `waitMs`, until
 * it is at least `minSize` entries and the required witnesses' quorum cosigned it. `met` says whether
 * that happened; `last` is the last checkpoint seen. A checkpoint that does not verify with the log key,
 * or that carries a required witness's line that does not verify, ends the wait: `LogCheckError`.
 */
export async function awaitCosigned(
  wait: CosignedWait,
): Promise<{ met: boolean; last: CountedCheckpoint; waitedMs: number }> {
  const started = Date.now();
  let seenNote: string | undefined;
  for (let attempt = 1; ; attempt++) {
    const note = await wait.read();
    let checkpoint: LogCheckpoint;
    try {
      checkpoint = openCheckpoint(note, wait.logKey);
    } catch (error) {
      throw new LogCheckError(
        'checkpoint',
        `log checkpoint rejected: it does not verify with the log key ${wait.logKey} (${(error as Error).message})`,
      );
    }
    if (note !== seenNote) await wait.observe?.(note);
    seenNote = note;
    const count = countCosignatures(note, wait.policy);
    if (count.bad.length > 0 || count.malformed !== undefined)
      throw new LogCheckError(
        'checkpoint',
        `log checkpoint rejected: ${checkpoint.origin} ${describeCheckpoint(checkpoint)}: ${describeCount(count, note)}`,
      );
    const last = { checkpoint, count };
    const waitedMs = Date.now() - started;
    if (count.met && checkpoint.size >= (wait.minSize ?? 0)) return { met: true, last, waitedMs };
    const pauseMs = Math.min(500 * attempt, 5_000);
    if (waitedMs + pauseMs > wait.waitMs) return { met: false, last, waitedMs };
    wait.onWait?.(last, waitedMs);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

/** The log's reads that bringing a tlog-proof up takes: consistency proofs and tiles. */
export interface LogReads {
  consistency: (from: number, to: number) => Promise<Uint8Array[]>;
  tile: TileReader;
}

/**
 * Brings proofs' tlog-proofs up to a later checkpoint of the log, `target` (opened with `logKey`):
 * for each, the checkpoint it had must be consistent with `target` (a consistency proof from the
 * service; one that does not verify is `log fork detected`, none at all `LogUncheckedError`), and its
 * inclusion proof at `target`'s size is built from the log's tiles (which must hash to `target`'s
 * root) and must lead from the proof to that root. Answers, in order, each new tlog-proof, or
 * undefined for a proof left as it was: its checkpoint is as large as `target` or larger, it names no
 * place in the log below `target`'s size, or its place is not where the tiles have it.
 */
export async function bringUp(
  reads: LogReads,
  items: readonly { proof: ProofFile['proof']; tlogProof: string | undefined }[],
  target: LogCheckpoint,
  logKey: string,
): Promise<(string | undefined)[]> {
  const tiles = new TileLog(reads.tile);
  let tilesChecked = false;
  const consistent = new Set<number>();
  const results: (string | undefined)[] = [];
  for (const { proof, tlogProof } of items) {
    let leafIndex = proof.log?.leafIndex;
    let from: LogCheckpoint | undefined;
    if (tlogProof !== undefined) {
      try {
        const parsed = parseTlogProof(tlogProof);
        leafIndex = parsed.leafIndex;
        from = openCheckpoint(parsed.checkpoint, logKey);
      } catch {
        // A tlog-proof that is not one, or not the log's: replaced if the proof's place is known.
      }
    }
    if (leafIndex === undefined || leafIndex < 0 || leafIndex >= target.size) {
      results.push(undefined);
      continue;
    }
    if (from !== undefined) {
      if (from.size > target.size || (from.size === target.size && from.note === target.note)) {
        results.push(undefined);
        continue;
      }
      if (!consistent.has(from.size)) {
        await checkConsistent(reads, from, target);
        consistent.add(from.size);
      }
    }
    if (!tilesChecked) {
      const root = Buffer.from(await tiles.root(target.size));
      if (!root.equals(target.rootHash))
        throw new LogCheckError(
          'tiles',
          `log tiles do not match the checkpoint: ${target.origin} at size ${target.size}: the tree of its hash tiles has root ${root.toString('base64')}`,
        );
      tilesChecked = true;
    }
    const [hashes = []] = await tiles.inclusionProofs([leafIndex], target.size);
    const leaf = leafHash(Buffer.from(signingMessage(proof), 'utf8'));
    results.push(
      verifyInclusion(leafIndex, target.size, leaf, hashes, target.rootHash)
        ? formatTlogProof({ leafIndex, hashes, checkpoint: target.note })
        : undefined,
    );
  }
  return results;
}

/** `from` must be a prefix of `target`: a consistency proof from the service, checked here. */
async function checkConsistent(reads: LogReads, from: LogCheckpoint, target: LogCheckpoint): Promise<void> {
  let proof: Uint8Array[] = [];
  if (from.size > 0 && from.size < target.size) {
    try {
      proof = await reads.consistency(from.size, target.size);
    } catch (error) {
      throw new LogUncheckedError(
        `could not check the log: ${target.origin}: no consistency proof from size ${from.size} to ${target.size} (${(error as Error).message})`,
        { cause: error },
      );
    }
  }
  const comparison = compareCheckpoints(from, target, proof);
  if (!comparison.consistent)
    throw new LogCheckError(
      'fork',
      `log fork detected: ${target.origin}: the service's cosigned checkpoint (${describeCheckpoint(target)}) is ` +
        `inconsistent with the one in the proof file (${describeCheckpoint(from)}): ${comparison.reason}`,
    );
}
