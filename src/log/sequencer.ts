import type pino from 'pino';
import { leafHash } from '../core/merkle.ts';
import { addInteriorNodes, getterOf, newNodes, nodeKey, nodesNeeded, treeRoot } from '../core/merkle-tree.ts';
import { formatCheckpoint, signNote } from '../core/signed-note.ts';
import type { LogKey } from '../keys/keyring.ts';
import type { Clock } from '../platform/clock.ts';
import type { LeafSource } from './leaf-source.ts';
import type { Db } from '../db/index.ts';
import { LogInconsistent, type LogGuard, type TreeReader } from './log-guard.ts';
import { HeadMoved, type LogStore, type SignedCheckpoint } from './log-store.ts';

/**
 * At most this many proofs join the tree in one signed step. Catching up on 300,000 proofs takes about
 * 6 s at 512 as at 4,096, but the service peaked at 200 MB instead of 408 MB.
 */
const BATCH = 512;
/** An idle sequencer looks for new proofs this often (a nudge after each commit is faster). */
const IDLE_POLL_MS = 250;
/**
 * After a step that integrated proofs, while more keep arriving, the sequencer waits this long so the
 * next batch gathers them: one transaction and one signed checkpoint per 100 ms of proofs rather than
 * per commit of the writer. Longer steps cost less per proof (20 → 100 ms: 8–10 % more proofs/s under
 * full load, no gain beyond), and a proof still reaches a signed tree in about a tenth of a second
 * (docs/decisions.md, "Log steps of 100 ms").
 */
const GATHER_MS = 100;

interface SequencerDeps {
  store: LogStore;
  /** The entries to integrate, and where their leaf indexes are recorded. */
  leaves: Pick<LeafSource, 'unsequenced' | 'assignLeafIndexes'>;
  key: LogKey;
  /** The log's name, as stored (`LogService.open`): every checkpoint is signed under it. */
  origin: string;
  clock: Clock;
  log: pino.Logger;
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
  #running = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #pendingNudge = false;

  constructor(deps: SequencerDeps) {
    this.#deps = deps;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
  }

  /** New proofs were committed: integrate them now rather than at the next poll. */
  nudge(): void {
    this.#pendingNudge = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    while (this.#running) {
      let integrated = 0;
      let delay = IDLE_POLL_MS;
      try {
        integrated = await this.sequence();
      } catch (error) {
        // The guard told the log once what is wrong; it looks again until the operator has acted.
        if (error instanceof LogInconsistent) delay = STOPPED_POLL_MS;
        else if (!(error instanceof HeadMoved)) {
          this.#deps.log.warn({ err: error }, 'log sequencer: step failed, retrying');
          delay = 1_000;
        } else delay = 0;
      }
      if (integrated === BATCH || !this.#running) continue;
      if (this.#pendingNudge) {
        this.#pendingNudge = false;
        if (delay === IDLE_POLL_MS) {
          // Not woken by nudges: they come with every commit while proofs keep arriving.
          if (integrated > 0) await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
          continue;
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
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
   * One sequencing step: up to BATCH unsequenced proofs become leaves, the new subtree hashes are
   * stored, and a checkpoint of the new size is signed, all in one transaction that first moves the
   * head from the size it read (compare-and-swap). The guard checks the tree first (throwing
   * `LogInconsistent` when it is not the one the log published) and records the signed checkpoint
   * before `onSigned` hears of it. Returns how many proofs were integrated.
   */
  async sequence(): Promise<number> {
    const { store, leaves, clock, guard } = this.#deps;
    let signed: SignedCheckpoint | undefined;
    let newer: SignedCheckpoint | undefined;
    const integrated = await store.transaction(async (trx) => {
      const oldSize = await store.headSize(trx);
      newer = await guard.check(this.#reader(trx, oldSize));
      const entries = await leaves.unsequenced(trx, BATCH);
      if (entries.length === 0) {
        if (oldSize === 0) {
          const empty = this.#sign(0, Buffer.from(treeRoot(0, () => new Uint8Array())));
          await store.addCheckpoint(trx, empty, clock.now(), { ifAbsent: true });
        }
        return 0;
      }
      const newSize = oldSize + entries.length;
      await store.moveHead(trx, oldSize, newSize);

      // The new complete subtrees, lowest level first; their children are new or already stored.
      const nodes = new Map<string, Uint8Array>();
      entries.forEach((entry, i) => nodes.set(nodeKey(0, oldSize + i), leafHash(entry.leaf)));
      const created = newNodes(oldSize, newSize);
      const stored = created
        .filter((n) => n.level > 0)
        .flatMap((n) => [
          { level: n.level - 1, index: 2 * n.index },
          { level: n.level - 1, index: 2 * n.index + 1 },
        ])
        .filter((n) => n.index < Math.floor(oldSize / 2 ** n.level));
      for (const [key, hash] of await store.nodes(stored, trx)) nodes.set(key, hash);
      addInteriorNodes(nodes, created);
      const rootNodes = nodesNeeded((get) => treeRoot(newSize, get)).filter(
        (n) => !nodes.has(nodeKey(n.level, n.index)),
      );
      for (const [key, hash] of await store.nodes(rootNodes, trx)) nodes.set(key, hash);
      const get = getterOf(nodes);
      const root = Buffer.from(treeRoot(newSize, get));

      await store.addNodes(
        trx,
        created.map(({ level, index }) => ({ level, index, hash: get(level, index) })),
      );
      await leaves.assignLeafIndexes(
        trx,
        entries.map((entry, i) => ({ seq: entry.seq, leafIndex: oldSize + i })),
      );
      const checkpoint = this.#sign(newSize, root);
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
