import { CompactRange, rangeNodes } from '../core/compact-range.ts';
import { leafHash, verifyConsistency } from '../core/merkle.ts';
import { parseEntryBundle, tilePath, tileWidth, TILE_HEIGHT, TILE_WIDTH } from '../core/tlog-tiles.ts';
import { describeCheckpoint, type LogCheckpoint } from '../verify/log-checkpoints.ts';
import { LogCheckError, LogUncheckedError, type ConsistencyProver } from './log-memory.ts';

/** Reads a C2SP tile of the log: a hash tile (`level` a number) or an entry bundle, `width` entries wide. */
export type TileReader = (level: number | 'entries', index: number, width: number) => Promise<Uint8Array>;

const HASH = 32;

export interface AuditOptions {
  /** Check at most this many entries (the rest at a later pass); all of them by default. */
  maxEntries?: number;
  /**
   * Consistency proofs from the log, needed when `maxEntries` stops short of the checkpoint: the tree
   * of the entries checked must then be proved a prefix of the checkpoint's tree.
   */
  prove?: ConsistencyProver;
}

/**
 * Checks the entries [from, checkpoint.size) of a log against its tiles (C2SP tlog-tiles): each entry of
 * the entry bundles hashes to its leaf hash in the level-0 tile, and the tree those hashes continue (the
 * right edge of the first `from` entries, read from the hash tiles) has the checkpoint's root. With
 * `maxEntries`, it stops after that many, and the tree so far must be consistent with the checkpoint
 * (a consistency proof from `prove`). Holds one tile per level at a time and the tree's right edge
 * (a compact range), whatever the log's size. Throws `LogCheckError` at the first thing that does not
 * hold, `LogUncheckedError` when no consistency proof comes back; returns how many entries it checked.
 */
export async function auditEntries(
  read: TileReader,
  from: number,
  checkpoint: LogCheckpoint,
  { maxEntries = Infinity, prove }: AuditOptions = {},
): Promise<number> {
  const size = checkpoint.size;
  if (from >= size) return 0;
  const end = Math.min(size, from + maxEntries);
  const fail = (what: string) =>
    new LogCheckError(
      'tiles',
      `log tiles do not match the checkpoint: ${checkpoint.origin} ${describeCheckpoint(checkpoint)}: ${what}`,
    );
  // The last hash tile read at each level: the edge and the entries after it read each tile once.
  const tiles = new Map<number, { key: string; tile: Uint8Array }>();
  const hashTile = async (level: number, index: number): Promise<Uint8Array> => {
    const width = tileWidth(level, index, size);
    const key = tilePath(level, index, width);
    const held = tiles.get(level);
    if (held?.key === key) return held.tile;
    const tile = await read(level, index, width);
    if (tile.length !== HASH * width) throw fail(`tile ${key} holds ${tile.length} bytes`);
    tiles.set(level, { key, tile });
    return tile;
  };

  // The right edge of the first `from` entries: each subtree of level l is the tree of 2^(l mod 8)
  // hashes of one tile at level ⌊l / 8⌋.
  const edge: Uint8Array[] = [];
  for (const { level, index } of rangeNodes(from)) {
    const tileLevel = Math.floor(level / TILE_HEIGHT);
    const span = 2 ** (level % TILE_HEIGHT);
    const first = index * span;
    const tile = await hashTile(tileLevel, Math.floor(first / TILE_WIDTH));
    const offset = (first % TILE_WIDTH) * HASH;
    const subtree = new CompactRange(0, []);
    for (let i = 0; i < span; i++) subtree.append(tile.subarray(offset + i * HASH, offset + (i + 1) * HASH));
    edge.push(subtree.root());
  }
  const range = new CompactRange(from, edge);

  for (let index = Math.floor(from / TILE_WIDTH); index * TILE_WIDTH < end; index++) {
    const width = tileWidth(0, index, size);
    const bundle = await read('entries', index, width);
    let entries: Buffer[];
    try {
      entries = parseEntryBundle(bundle);
    } catch (error) {
      throw fail(`${tilePath('entries', index, width)}: ${(error as Error).message}`);
    }
    if (entries.length !== width)
      throw fail(`the entry bundle ${tilePath('entries', index, width)} holds ${entries.length} entries`);
    const leaves = await hashTile(0, index);
    const last = Math.min(width, end - index * TILE_WIDTH);
    for (let i = Math.max(0, from - index * TILE_WIDTH); i < last; i++) {
      const hash = leafHash(entries[i]!);
      if (!hash.equals(leaves.subarray(i * HASH, (i + 1) * HASH)))
        throw fail(
          `entry ${index * TILE_WIDTH + i} does not hash to its leaf hash in tile ${tilePath(0, index, width)}`,
        );
      range.append(hash);
    }
  }
  const root = Buffer.from(range.root());
  if (end === size) {
    if (!root.equals(checkpoint.rootHash))
      throw fail(`the tree of the tiles has root ${root.toString('base64')}`);
    return size - from;
  }
  if (prove === undefined)
    throw new RangeError('auditEntries: maxEntries short of the checkpoint needs prove');
  const unchecked = (why: string, cause?: unknown) =>
    new LogUncheckedError(
      `could not check the log: ${checkpoint.origin}: no consistency proof from size ${end} to ${size} (${why})`,
      { cause },
    );
  let proof: Uint8Array[] | undefined;
  try {
    proof = await prove(end, size);
  } catch (error) {
    throw unchecked((error as Error).message, error);
  }
  if (proof === undefined) throw unchecked('the log gives none');
  if (!verifyConsistency(end, size, root, checkpoint.rootHash, proof))
    throw fail(
      `the tree of the tiles' first ${end} entries (root ${root.toString('base64')}) is not proved a prefix of it`,
    );
  return end - from;
}
