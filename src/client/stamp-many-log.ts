import { nodeHash } from '../core/merkle.ts';
import { consistencyPath, inclusionPath, nodeKey, treeRoot } from '../core/merkle-tree.ts';
import { parseEntryBundle, tilePath, tileWidth, TILE_HEIGHT, TILE_WIDTH } from '../core/tlog-tiles.ts';
import type { TileReader } from './log-audit.ts';

const HASH = 32;
const PLACEHOLDER = new Uint8Array(HASH);

/**
 * The log as a client that stamps many proofs reads it: from its C2SP tiles, each read once, rather
 * than one request per proof. Inclusion and consistency proofs are built locally from the hash tiles
 * (every node of a tree of size N is a subtree hash within one tile), and the entries from the entry
 * bundles. Nothing read here is trusted: each proof built is checked against a signed checkpoint.
 */
export class TileLog {
  readonly #read: TileReader;
  /** Tiles by path (a partial tile's path names its width, so a larger tree reads it again). */
  readonly #tiles = new Map<string, Uint8Array>();
  /** Subtree hashes computed from the tiles, by node; valid for any tree that holds the subtree. */
  readonly #nodes = new Map<string, Uint8Array>();

  constructor(read: TileReader) {
    this.#read = read;
  }

  /** The entries [from, to) of the tree of `size` entries, in order, from the entry bundles. */
  async entries(from: number, to: number, size: number, onEntry: (index: number, entry: Buffer) => void) {
    for (let index = Math.floor(from / TILE_WIDTH); index * TILE_WIDTH < to; index++) {
      const width = tileWidth(0, index, size);
      const entries = parseEntryBundle(await this.#read('entries', index, width));
      if (entries.length !== width)
        throw new Error(
          `the entry bundle ${tilePath('entries', index, width)} holds ${entries.length} entries`,
        );
      const first = index * TILE_WIDTH;
      for (let i = Math.max(0, from - first); i < width && first + i < to; i++)
        onEntry(first + i, entries[i]!);
    }
  }

  /** The inclusion proof of each leaf index in the tree of `size` entries, read from its hash tiles. */
  async inclusionProofs(indexes: readonly number[], size: number): Promise<Uint8Array[][]> {
    return this.#withNodes(size, (get) => indexes.map((index) => inclusionPath(index, size, get)));
  }

  /** The root of the tree of `size` entries (at least one), hashed up from its hash tiles. */
  async root(size: number): Promise<Uint8Array> {
    return this.#withNodes(size, (get) => treeRoot(size, get));
  }

  /** The consistency proof from the tree of `from` entries to the tree of `to`, read from the hash tiles. */
  async consistencyProof(from: number, to: number): Promise<Uint8Array[]> {
    return this.#withNodes(to, (get) => consistencyPath(from, to, get));
  }

  /**
   * Runs `compute` twice: first with placeholder nodes, to list the nodes it asks for (the shape of a
   * Merkle computation depends on the indexes alone), then, once the tiles holding them are read,
   * with the real ones.
   */
  async #withNodes<T>(size: number, compute: (get: (level: number, index: number) => Uint8Array) => T) {
    const wanted = new Map<string, { level: number; index: number }>();
    compute((level, index) => {
      wanted.set(nodeKey(level, index), { level, index });
      return PLACEHOLDER;
    });
    for (const { level, index } of wanted.values())
      if (!this.#nodes.has(nodeKey(level, index))) await this.#node(level, index, size);
    return compute((level, index) => this.#nodes.get(nodeKey(level, index))!);
  }

  /** Reads the tile holding a complete subtree of the tree of `size` and hashes the subtree up from it. */
  async #node(level: number, index: number, size: number): Promise<void> {
    const tileLevel = Math.floor(level / TILE_HEIGHT);
    const span = 2 ** (level % TILE_HEIGHT);
    const first = index * span;
    const tileIndex = Math.floor(first / TILE_WIDTH);
    const tile = await this.#tile(tileLevel, tileIndex, tileWidth(tileLevel, tileIndex, size));
    const offset = first % TILE_WIDTH;
    if ((offset + span) * HASH > tile.length)
      throw new Error(
        `tile ${tilePath(tileLevel, tileIndex, tile.length / HASH)} ends before node ${level}/${index}`,
      );
    let row: Uint8Array[] = [];
    for (let i = 0; i < span; i++) row.push(tile.subarray((offset + i) * HASH, (offset + i + 1) * HASH));
    for (let up = 0; row.length > 1; up++) {
      const next: Uint8Array[] = [];
      for (let i = 0; i < row.length; i += 2) next.push(nodeHash(row[i]!, row[i + 1]!));
      row = next;
    }
    this.#nodes.set(nodeKey(level, index), row[0]!);
  }

  async #tile(level: number, index: number, width: number): Promise<Uint8Array> {
    const key = tilePath(level, index, width);
    let tile = this.#tiles.get(key);
    if (tile === undefined) {
      tile = await this.#read(level, index, width);
      if (tile.length !== HASH * width) throw new Error(`tile ${key} holds ${tile.length} bytes`);
      // A partial tile is kept too (8 KiB at most): the nodes of one tree often share it.
      this.#tiles.set(key, tile);
    }
    return tile;
  }
}
