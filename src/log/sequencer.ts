import { CompactRange, integrate } from '../core/compact-range.ts';
import { leafHash } from '../core/merkle.ts';
import { getterOf } from '../core/merkle-tree.ts';
import { formatCheckpoint, signNote } from '../core/signed-note.ts';
import { BackgroundLoop, type NextStep } from '../platform/background-loop.ts';
import type { Clock } from '../platform/clock.ts';
import type { LeafSource } from './leaf-source.ts';
import type { Db } from '../db/index.ts';
import { LogInconsistent, type LogGuard, type TreeReader } from './log-guard.ts';
import type { LogParts } from './log-service.ts';
import { HeadMoved, type SignedCheckpoint } from './log-store.ts';

/**
 * At most this many proofs join the tree in one signed step. Catching up on 300,000 proofs takes about
 * 6 s at 512 as at 4,096, but the service peaked at 200 MB instead of 408 MB.
 */
const BATCH = 512;
/** An idle sequencer looks for new proofs this often (a nudge after each commit is faster). */
const IDLE_POLL_MS = 250;
/**
 * When commits nudged the sequencer during a step that integrated proofs (more keep arriving), the
 * next step waits this long, so that it gathers theirs: one transaction and one signed checkpoint per
 * 100 ms of proofs rather than per commit of the writer. Longer steps cost less per proof (20 → 100 ms:
 * 8–10 % more proofs/s under full load, no gain beyond), and a proof still reaches a signed tree in
 * about a tenth of a second (docs/decisions.md, "Log steps of 100 ms").
 */
const GATHER_MS = 100;

interface SequencerDeps extends LogParts {
  /** The entries to integrate, and where their leaf indexes are recorded. */
  leaves: Pick<LeafSource, 'notIntegrated' | 'assignLeafIndexes'>;
  clock: Clock;
  /**
   * Checks the database's tree against the checkpoints the log published before each step, and records
   * each one it signs outside the database.
   */
  guard: LogGuard;
  /** Hears each checkpoint a step signed, once its transaction committed and it was recorded. */
  onSigned: (checkpoint: SignedCheckpoint) => void;
}

/** A stopped log is looked at again this often (an operator may have restored the database). */
const STOPPED_POLL_MS = 1_000;

/**
 * The one writer of the log on this instance: integrates new proofs in batches and signs a checkpoint
 * of each new tree. Instances run one each; the head's compare-and-swap (`LogStore`) makes one step win
 * when two extend the same tree, and the other simply tries again, so the log cannot fork.
 */
export class Sequencer {
  readonly #deps: SequencerDeps;
  readonly #loop: BackgroundLoop;

  constructor(deps: SequencerDeps) {
    this.#deps = deps;
    this.#loop = new BackgroundLoop({
      name: 'log sequencer',
      step: () => this.#step(),
      logger: deps.logger,
      retry: { firstMs: 1_000, maxMs: 10_000 },
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops after the step under way: what it integrates is committed and signed. */
  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** New proofs were committed: integrate them now rather than at the next poll. */
  nudge(): void {
    this.#loop.nudge();
  }

  /** One step of the loop, and when the next runs. */
  async #step(): Promise<NextStep> {
    let integrated: number;
    try {
      integrated = await this.integrate();
    } catch (error) {
      // Another instance moved the head first: its tree is the one to extend, at once.
      if (error instanceof HeadMoved) return 0;
      // The guard told the log once what is wrong; it looks again until the operator has acted.
      if (error instanceof LogInconsistent) return STOPPED_POLL_MS;
      throw error;
    }
    if (integrated === BATCH) return 0;
    // Nudged meanwhile, the next step gathers the proofs of GATHER_MS; else it waits for a nudge.
    return integrated > 0 ? { ms: IDLE_POLL_MS, holdMs: GATHER_MS } : IDLE_POLL_MS;
  }

  /**
   * Checks the database's tree against the checkpoints the log published, as each step does first
   * (at start, before the first step). Throws nothing for an inconsistent log: `problem` says it.
   */
  async check(): Promise<void> {
    const { store, guard } = this.#deps;
    try {
      const newer = await store.transaction(async (trx) =>
        guard.check(this.#reader(trx, await store.headSize(trx))),
      );
      if (newer !== undefined) await guard.record(newer);
    } catch (error) {
      if (!(error instanceof LogInconsistent)) throw error;
    }
  }

  /**
   * One step: up to BATCH proofs not integrated yet become leaves, the new subtree hashes are stored,
   * and a checkpoint of the new size is signed, all in one transaction that first moves the head from
   * the size it read (compare-and-swap). The guard checks the tree first (throwing `LogInconsistent`
   * when it is not the one the log published) and records the signed checkpoint before `onSigned`
   * hears of it. Returns how many proofs were integrated.
   */
  async integrate(): Promise<number> {
    const { store, leaves, clock, guard } = this.#deps;
    let signed: SignedCheckpoint | undefined;
    let newer: SignedCheckpoint | undefined;
    const integrated = await store.transaction(async (trx) => {
      const oldSize = await store.headSize(trx);
      newer = await guard.check(this.#reader(trx, oldSize));
      const entries = await leaves.notIntegrated(trx, BATCH);
      if (entries.length === 0) {
        if (oldSize === 0) {
          const empty = this.#sign(0, Buffer.from(new CompactRange(0, []).root()));
          await store.addCheckpoint(trx, empty, clock.now(), { ifAbsent: true });
        }
        return 0;
      }
      const newSize = oldSize + entries.length;
      await store.moveHead(trx, oldSize, newSize);
      // The new subtrees and root, from the old tree's right edge: a few stored nodes, read at once.
      const tree = await integrate(
        oldSize,
        entries.map((entry) => leafHash(entry.leaf)),
        async (edge) => {
          const get = getterOf(await store.nodes(edge, trx));
          return edge.map(({ level, index }) => get(level, index));
        },
      );
      await store.addNodes(trx, tree.nodes);
      await leaves.assignLeafIndexes(
        trx,
        entries.map((entry, i) => ({ seq: entry.seq, leafIndex: oldSize + i })),
      );
      const checkpoint = this.#sign(newSize, Buffer.from(tree.root));
      await store.addCheckpoint(trx, checkpoint, clock.now());
      signed = checkpoint;
      return entries.length;
    });
    if (signed !== undefined) {
      await guard.record(signed);
      this.#deps.onSigned(signed);
    } else if (newer !== undefined) await guard.record(newer);
    return integrated;
  }

  /** The tree as the step's transaction sees it. */
  #reader(trx: Db, headSize: number): TreeReader {
    const { store } = this.#deps;
    return {
      headSize,
      nodes: (wanted) => store.nodes(wanted, trx),
      checkpointAt: (size) => store.checkpointAt(size, trx),
    };
  }

  /** The checkpoint of a tree, signed with the log key (C2SP tlog-checkpoint, signed-note). */
  #sign(treeSize: number, rootHash: Buffer): SignedCheckpoint {
    const { key, origin } = this.#deps;
    const note = formatCheckpoint({ origin, size: treeSize, rootHash, extensions: [] });
    return { treeSize, rootHash, checkpoint: signNote(note, origin, key.privateKey, key.publicKey) };
  }
}
