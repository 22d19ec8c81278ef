import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { consistencyProof, rootHash } from '../../test/merkle-reference.ts';
import { vectorsDir } from '../../test/vectors.ts';
import { leafHash } from '../core/merkle.ts';
import { formatCheckpoint, formatVerifierKey, signNote } from '../core/signed-note.ts';
import { tilePath } from '../core/tlog-tiles.ts';
import { openCheckpoint } from '../verify/log-checkpoints.ts';
import { auditEntries, type TileReader } from './log-audit.ts';
import { LogCheckError, LogUncheckedError } from './log-memory.ts';

const TESSERA = vectorsDir('tessera-log');
const TESSERA_VKEY = 'example.com/log/testdata+33d7b496+AeHTu4Q3hEIMHNqc6fASMsq3rKNx280NI+oO5xCFkkSx';

test('a real C2SP log written by Tessera: its tiles pass from every size to every larger checkpoint', async () => {
  const read: TileReader = async (level, index, width) =>
    readFileSync(path.join(TESSERA, 'tile', tilePath(level, index, width)));
  for (let to = 0; to <= 15; to++) {
    const checkpoint = openCheckpoint(
      readFileSync(path.join(TESSERA, `checkpoint.${to}`), 'utf8'),
      TESSERA_VKEY,
    );
    for (let from = 0; from <= to; from++)
      assert.equal(await auditEntries(read, from, checkpoint), to - from, `${from} → ${to}`);
  }
});

/** The tiles of a log of `count` entries, computed from the RFC 9162 definitions (test/merkle-reference.ts). */
function tilesOf(entries: readonly Buffer[]): Map<string, Buffer> {
  const tiles = new Map<string, Buffer>();
  const leaves = entries.map((entry) => leafHash(entry));
  for (let index = 0; index * 256 < entries.length; index++) {
    const chunk = entries.slice(index * 256, index * 256 + 256);
    for (let width = 1; width <= chunk.length; width++) {
      const lengths = chunk.slice(0, width).flatMap((entry) => {
        const length = Buffer.alloc(2);
        length.writeUInt16BE(entry.length);
        return [length, entry];
      });
      tiles.set(tilePath('entries', index, width), Buffer.concat(lengths));
      tiles.set(tilePath(0, index, width), Buffer.concat(leaves.slice(index * 256, index * 256 + width)));
    }
  }
  // Level 1: the roots of complete 256-leaf subtrees.
  const level1 = Array.from({ length: Math.floor(entries.length / 256) }, (_, i) =>
    rootHash(leaves.slice(i * 256, (i + 1) * 256)),
  );
  for (let width = 1; width <= level1.length; width++)
    tiles.set(tilePath(1, 0, width), Buffer.concat(level1.slice(0, width)));
  return tiles;
}

test('a log of several tiles: entries and edge from the level-1 tile check against the root; any changed byte fails', async () => {
  const entries = Array.from({ length: 700 }, (_, i) => Buffer.from(`entry ${i}`));
  const tiles = tilesOf(entries);
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const origin = 'audit.example/log';
  const checkpointOf = (size: number) =>
    openCheckpoint(
      signNote(
        formatCheckpoint({
          origin,
          size,
          rootHash: rootHash(entries.slice(0, size).map((e) => leafHash(e))),
          extensions: [],
        }),
        origin,
        privateKey,
        publicKey,
      ),
      formatVerifierKey(origin, publicKey),
    );
  const asked: string[] = [];
  let alter = (_path: string, tile: Buffer) => tile;
  const read: TileReader = async (level, index, width) => {
    const key = tilePath(level, index, width);
    asked.push(key);
    const tile = tiles.get(key);
    if (tile === undefined) throw new Error(`no tile ${key}`);
    return alter(key, tile);
  };
  const checkpoint = checkpointOf(700);
  for (const from of [0, 1, 255, 256, 257, 300, 511, 512, 513, 699, 700]) {
    asked.length = 0;
    assert.equal(await auditEntries(read, from, checkpoint), 700 - from, `from ${from}`);
    // Only the tiles the new entries and the edge need, each once.
    assert.equal(new Set(asked).size, asked.length);
    if (from >= 256) assert.ok(!asked.includes('entries/000'), `from ${from} reads no older bundle`);
  }
  assert.equal(await auditEntries(read, 256, checkpointOf(600)), 344, 'a smaller tree, partial tiles');

  const flip = (tile: Buffer, at: number) => {
    const copy = Buffer.from(tile);
    copy[at]! ^= 1;
    return copy;
  };
  const cases: [string, number, (key: string, tile: Buffer) => Buffer, RegExp][] = [
    ['an entry of a bundle', 0, (k, t) => (k === 'entries/001' ? flip(t, 5) : t), /entry 256 does not hash/],
    [
      'a leaf hash of a tile',
      0,
      (k, t) => (k === '0/002.p/188' ? flip(t, 40) : t),
      /entry 513 does not hash/,
    ],
    ['an edge hash of the level-1 tile', 600, (k, t) => (k === '1/000.p/2' ? flip(t, 3) : t), /has root/],
    ['a truncated tile', 0, (k, t) => (k === '0/001' ? t.subarray(0, 32) : t), /holds 32 bytes/],
    [
      'a bundle cut inside an entry',
      0,
      (k, t) => (k === 'entries/000' ? t.subarray(0, 12) : t),
      /ends inside an entry/,
    ],
  ];
  for (const [name, from, alteration, problem] of cases) {
    alter = alteration;
    await assert.rejects(
      auditEntries(read, from, checkpoint),
      (error) =>
        error instanceof LogCheckError &&
        error.kind === 'tiles' &&
        error.message.startsWith('log tiles do not match the checkpoint: audit.example/log size 700') &&
        problem.test(error.message),
      name,
    );
  }
});

test('a log larger than maxEntries is checked a pass at a time, each pass proved a prefix of the checkpoint', async () => {
  // 66,536 entries: three tile levels, read on demand, each tile computed from the leaves.
  const size = 2 ** 16 + 1000;
  const entryOf = (i: number) => Buffer.from(`entry ${i}`);
  const leaves = Array.from({ length: size }, (_, i) => leafHash(entryOf(i)));
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const origin = 'large.example/log';
  const checkpoint = openCheckpoint(
    signNote(
      formatCheckpoint({ origin, size, rootHash: rootHash(leaves), extensions: [] }),
      origin,
      privateKey,
      publicKey,
    ),
    formatVerifierKey(origin, publicKey),
  );
  const reads: string[] = [];
  const read: TileReader = async (level, index, width) => {
    reads.push(tilePath(level, index, width));
    const first = index * 256;
    if (level === 'entries')
      return Buffer.concat(
        Array.from({ length: width }, (_, i) => {
          const entry = entryOf(first + i);
          return Buffer.concat([Buffer.from([entry.length >> 8, entry.length & 0xff]), entry]);
        }),
      );
    const span = 256 ** level;
    return Buffer.concat(
      Array.from({ length: width }, (_, i) =>
        rootHash(leaves.slice((first + i) * span, (first + i + 1) * span)),
      ),
    );
  };
  const proofs: string[] = [];
  const prove = async (from: number, to: number) => {
    proofs.push(`${from}→${to}`);
    return consistencyProof(from, leaves.slice(0, to));
  };
  let from = 0;
  for (const expected of [30_000, 30_000, size - 60_000]) {
    reads.length = 0;
    assert.equal(await auditEntries(read, from, checkpoint, { maxEntries: 30_000, prove }), expected);
    assert.equal(new Set(reads).size, reads.length, 'each tile read once');
    assert.ok(reads.length <= (2 * expected) / 256 + 8, `${reads.length} tiles read for ${expected} entries`);
    from += expected;
  }
  assert.deepEqual(proofs, [`30000→${size}`, `60000→${size}`], 'the last pass ends at the checkpoint');

  const refused = auditEntries(read, 0, checkpoint, { maxEntries: 1000, prove: async () => undefined });
  await assert.rejects(refused, (error) => error instanceof LogUncheckedError);
  const lying = auditEntries(read, 0, checkpoint, {
    maxEntries: 1000,
    prove: async (f, t) => consistencyProof(f, leaves.slice(0, t)).map((hash) => leafHash(hash)),
  });
  await assert.rejects(
    lying,
    (error) =>
      error instanceof LogCheckError &&
      error.kind === 'tiles' &&
      /the tree of the tiles' first 1000 entries \(root \S+\) is not proved a prefix of it/.test(
        error.message,
      ),
  );
});
