import { CompactRange, rangeNodes } from '../core/compact-range.ts';
import { leafHash, nodeHash } from '../core/merkle.ts';
import { parseEntryBundle, tilePath, tileWidth, TILE_HEIGHT, TILE_WIDTH } from '../core/tlog-tiles.ts';
import { describeCheckpoint, type LogCheckpoint } from '../verify/log-checkpoints.ts';
import { LogCheckError } from './log-memory.ts';

/** Reads a C2SP tile of the log: a hash tile (`level` a number) or an entry bundle, `width` entries wide. */
export type TileReader = (level: number | 'entries', index: number, width: number) => Promise<Uint8Array>;

const HASH = 32;

/**
 * Checks the entries [from, checkpoint.size) of a log against its tiles (C2SP tlog-tiles): each entry of
 * the entry bundles hashes to its leaf hash in the level-0 tile, and the tree those hashes continue (the
 * right edge of the first `from` entries, read from the hash tiles) has the checkpoint's root. Throws
 * `LogCheckError` at the first thing that does not hold; returns how many entries it checked.
 */
export async function auditEntries(
  read: TileReader,
  from: number,
  checkpoint: LogCheckpoint,
): Promise<number> {
  const size = checkpoint.size;
  if (from >= size) return 0;
  const fail = (what: string) =>
    new LogCheckError(
      'tiles',
      `log tiles do not match the checkpoint: ${checkpoint.origin} ${describeCheckpoint(checkpoint)}: ${what}`,
    );
  const tiles = new Map<string, Uint8Array>();
  const hashTile = async (level: number, index: number): Promise<Uint8Array> => {
    const width = tileWidth(level, index, size);
    const key = tilePath(level, index, width);
    let tile = tiles.get(key);
    if (tile === undefined) {
      tile = await read(level, index, width);
      if (tile.length !== HASH * width) throw fail(`tile ${key} holds ${tile.length} bytes`);
      tiles.set(key, tile);
    }
    return tile;
  };

  // The right edge of the first `from` entries: each subtree of level l is 2^(l mod 8) hashes of one tile
  // at level ⌊l / 8⌋, hashed together.
  const edge: Uint8Array[] = [];
  for (const { level, index } of rangeNodes(from)) {
    const tileLevel = Math.floor(level / TILE_HEIGHT);
    const span = 2 ** (level % TILE_HEIGHT);
    const first = index * span;
    const tile = await hashTile(tileLevel, Math.floor(first / TILE_WIDTH));
    const offset = (first % TILE_WIDTH) * HASH;
    let hashes = Array.from({ length: span }, (_, i) =>
      tile.subarray(offset + i * HASH, offset + (i + 1) * HASH),
    );
    while (hashes.length > 1)
      hashes = Array.from({ length: hashes.length / 2 }, (_, i) =>
        nodeHash(hashes[2 * i]!, hashes[2 * i + 1]!),
      );
    edge.push(hashes[0]!);
  }
  const range = new CompactRange(from, edge);

  for (let index = Math.floor(from / TILE_WIDTH); index * TILE_WIDTH < size; index++) {
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
    for (let i = Math.max(0, from - index * TILE_WIDTH); i < width; i++) {
      const hash = leafHash(entries[i]!);
      if (!hash.equals(leaves.subarray(i * HASH, (i + 1) * HASH)))
        throw fail(
          `entry ${index * TILE_WIDTH + i} does not hash to its leaf hash in tile ${tilePath(0, index, width)}`,
        );
      range.append(hash);
    }
  }
  const root = Buffer.from(range.root());
  if (!root.equals(checkpoint.rootHash))
    throw fail(`the tree of the tiles has root ${root.toString('base64')}`);
  return size - from;
}
