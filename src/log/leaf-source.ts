import type { Db } from '../db/index.ts';

/**
 * Where the log's entries come from and where their leaf indexes are recorded: the proofs, wired in
 * `context.ts`. The sequencer calls `notIntegrated` and `assignLeafIndexes` with its step's transaction,
 * so taking entries, moving the head, storing the new nodes and recording the indexes commit together
 * or not at all.
 */
export interface LeafSource {
  /** Up to `limit` entries not integrated yet (no leaf index), oldest first: their sequence number and leaf bytes. */
  notIntegrated(trx: Db, limit: number): Promise<{ seq: number; leaf: Buffer }[]>;
  /** Records the leaf index each entry (by its sequence number) became, in the caller's transaction. */
  assignLeafIndexes(trx: Db, entries: { seq: number; leafIndex: number }[]): Promise<void>;
  /** How many entries wait for a leaf index, and when the oldest of them was made (ms). */
  backlog(): Promise<{ count: number; oldestCreatedAt: number | null }>;
  /** The leaves at indexes [first, first + count), in order; fewer when some are not integrated. */
  leaves(first: number, count: number): Promise<Buffer[]>;
}
