import { getterOf, nodesNeeded, treeRoot, type NodeGetter } from '../core/merkle-tree.ts';
import { parseCheckpoint } from '../core/signed-note.ts';
import type { Logger } from '../platform/log-options.ts';
import { LogStateFiles } from './log-state.ts';
import type { SignedCheckpoint } from './log-store.ts';

/** Why the log signs nothing and the service takes no new proofs, and what the operator can do about it. */
export interface LogProblem {
  reason: string;
  action: string;
}

/** The database's tree is not the one the log published: the step signs nothing. */
export class LogInconsistent extends Error {
  constructor(problem: LogProblem) {
    super(problem.reason);
    this.name = 'LogInconsistent';
  }
}

/** What a check reads from the database, in the caller's transaction. */
export interface TreeReader {
  /** The size of the tree the head points to. */
  headSize: number;
  nodes(wanted: readonly { level: number; index: number }[]): Promise<Map<string, Uint8Array>>;
  /** The signed note of a tree size; null for a size the log never signed. */
  checkpointAt(size: number): Promise<string | null>;
}

const RESTORING = 'docs/deploy.md, "Restoring a backup"';

/**
 * Keeps the log from signing a tree inconsistent with a checkpoint it published, even after its
 * database was restored from an older backup. The largest published checkpoint known is recorded
 * outside the database (`LogStateFiles`) and held in memory; before every step the sequencer has the
 * database's tree checked against it: a head smaller than the recorded size, or another root at that
 * size, stops the log (nothing is signed, new proofs are refused) until the operator acts.
 */
export class LogGuard {
  readonly #dir: string;
  readonly #logger: Logger;
  #files: LogStateFiles | undefined;
  /** The largest checkpoint known to be published: recorded, signed here, or found in the database. */
  #published: SignedCheckpoint | undefined;
  /** The largest tree size the files record (-1: none). */
  #written = -1;
  /** A record that cannot be read: the log stays stopped until the operator moves it aside. */
  #unreadable: LogProblem | undefined;
  #problem: LogProblem | undefined;

  constructor(deps: { dir: string; logger: Logger }) {
    this.#dir = deps.dir;
    this.#logger = deps.logger;
  }

  /** Reads the record of the log named `origin`, whose checkpoints `verifierKey` verifies. */
  async open(origin: string, verifierKey: string): Promise<void> {
    const files = new LogStateFiles(this.#dir, origin, verifierKey);
    await files.open();
    this.#files = files;
    try {
      const recorded = await files.latest();
      this.#published = recorded;
      this.#written = recorded?.treeSize ?? -1;
    } catch (error) {
      this.#unreadable = {
        reason: `The record of the latest published checkpoint cannot be read: ${(error as Error).message}.`,
        action: `Put the right record back, or move the files ${this.#pattern()} aside knowingly and restart (${RESTORING}).`,
      };
    }
  }

  /** Why the log is stopped; undefined while it is consistent with what it published. */
  get problem(): LogProblem | undefined {
    return this.#problem;
  }

  /**
   * Checks the database's tree against the largest published checkpoint; throws `LogInconsistent` when
   * it differs. Returns a checkpoint to record once the caller's transaction is over: the database's
   * newest, when it is ahead of the record (signed by another instance, or before the record existed).
   */
  async check(tree: TreeReader): Promise<SignedCheckpoint | undefined> {
    if (this.#unreadable !== undefined) throw this.#refuse(this.#unreadable, {});
    const published = this.#published;
    const head = tree.headSize;
    if (published !== undefined) {
      const recorded = { size: published.treeSize, root: published.rootHash.toString('base64') };
      if (head < published.treeSize) {
        throw this.#refuse(
          {
            reason: `The database holds a log of ${head} entries, but the log published a checkpoint of ${published.treeSize} entries: the database was restored from an older backup, or is not this log's database.`,
            action: this.#action(published.treeSize),
          },
          { recorded, database: { size: head } },
        );
      }
      const root = Buffer.from(await rootOf(published.treeSize, tree));
      if (!root.equals(published.rootHash)) {
        throw this.#refuse(
          {
            reason: `The database's log at ${published.treeSize} entries has root ${root.toString('base64')}, but the checkpoint the log published for ${published.treeSize} entries has root ${recorded.root}: the database holds another log.`,
            action: this.#action(published.treeSize),
          },
          { recorded, database: { size: head, root: root.toString('base64') } },
        );
      }
    }
    if (this.#problem !== undefined) {
      this.#problem = undefined;
      this.#logger.info(
        { treeSize: head },
        'the log is consistent with the checkpoints it published again; new proofs are accepted',
      );
    }
    if (head > (published?.treeSize ?? -1)) {
      const note = await tree.checkpointAt(head);
      if (note === null) return undefined;
      const { size, rootHash } = parseCheckpoint(note.slice(0, note.lastIndexOf('\n\n') + 1));
      const root = await rootOf(head, tree);
      if (size === head && rootHash.equals(root)) return { treeSize: size, rootHash, checkpoint: note };
    }
    return published !== undefined && published.treeSize > this.#written ? published : undefined;
  }

  /**
   * Records a checkpoint that was committed (and may have been served): in memory at once, then in the
   * files, before anyone is told of it.
   */
  async record(checkpoint: SignedCheckpoint): Promise<void> {
    if (this.#published === undefined || checkpoint.treeSize > this.#published.treeSize)
      this.#published = checkpoint;
    const largest = this.#published;
    if (this.#files === undefined || largest.treeSize <= this.#written) return;
    await this.#files.write(largest);
    this.#written = Math.max(this.#written, largest.treeSize);
  }

  /** Stops the log with `problem`, telling the log once what is wrong and what to do. */
  #refuse(problem: LogProblem, details: Record<string, unknown>): LogInconsistent {
    if (this.#problem?.reason !== problem.reason) {
      this.#problem = problem;
      this.#logger.error(
        { ...details, logStateDir: this.#dir },
        `the transparency log signs nothing and new proofs are refused: ${problem.reason} ${problem.action} The log state directory is ${this.#dir}.`,
      );
    }
    return new LogInconsistent(problem);
  }

  #action(size: number): string {
    return (
      `Restore the database backup that holds the whole published log (at least ${size} entries) and restart. ` +
      `If those entries are lost for good, accept the fork knowingly: stop every instance, move the files ` +
      `${this.#pattern()} aside and start again; every client that saw the later checkpoints will then ` +
      `report a fork (${RESTORING}).`
    );
  }

  /** The files of the record, as /health may name them (the directory is only in the service's log). */
  #pattern(): string {
    return `${this.#files?.prefix ?? 'log-checkpoint-'}* in the log state directory (LOG_STATE_DIR)`;
  }
}

/** The root of the stored tree of `size` entries. */
async function rootOf(size: number, tree: TreeReader): Promise<Uint8Array> {
  const compute = (get: NodeGetter) => treeRoot(size, get);
  return compute(getterOf(await tree.nodes(nodesNeeded(compute))));
}
