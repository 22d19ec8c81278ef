import { tileIndexPath } from './merkle-tree.ts';

/**
 * C2SP tlog-tiles (https://c2sp.org/tlog-tiles): a hash tile at level L holds up to 256 hashes of binary
 * level 8L; an entry bundle holds up to 256 entries, each a big-endian uint16 length and its bytes. A
 * tile is full (256) or, at the right edge of a tree, partial (`.p/W`). The log that serves tiles takes
 * their dimensions from here (log/log-service.ts, log/log-routes.ts); the client that reads them
 * (client/log-audit.ts) also their paths, their widths in a tree and the entries of a bundle.
 */

export const TILE_WIDTH = 256;
export const TILE_HEIGHT = 8;

/** The path of a tile below `tile/`: `0/x001/234`, `entries/042.p/17` (a width below 256 is partial). */
export function tilePath(level: number | 'entries', index: number, width: number): string {
  if (!Number.isSafeInteger(width) || width < 1 || width > TILE_WIDTH)
    throw new RangeError('not a tile width');
  return `${level}/${tileIndexPath(index)}${width < TILE_WIDTH ? `.p/${width}` : ''}`;
}

/**
 * How wide tile `index` of `level` is in the tree of `treeSize` entries (entry bundles are level 0):
 * 256 when full, less at the tree's right edge, 0 when the tree does not reach it.
 */
export function tileWidth(level: number, index: number, treeSize: number): number {
  const hashes = Math.floor(treeSize / TILE_WIDTH ** level);
  return Math.max(0, Math.min(TILE_WIDTH, hashes - index * TILE_WIDTH));
}

/** The entries of a bundle; throws when it does not end exactly at an entry's end. */
export function parseEntryBundle(bundle: Uint8Array): Buffer[] {
  const bytes = Buffer.from(bundle.buffer, bundle.byteOffset, bundle.byteLength);
  const entries: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 2 > bytes.length) throw new Error('the entry bundle ends inside a length');
    const length = bytes.readUInt16BE(at);
    if (at + 2 + length > bytes.length) throw new Error('the entry bundle ends inside an entry');
    entries.push(bytes.subarray(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return entries;
}
