/**
 * The parts of `stampMany` that need no service: the pacing on the RateLimit fields, and the inclusion
 * and consistency proofs built from a log's tiles, checked against the RFC 9162 reference.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { leafHash, nodeHash } from '../core/merkle.ts';
import { TILE_HEIGHT, TILE_WIDTH } from '../core/tlog-tiles.ts';
import { consistencyProof, inclusionProof, rootHash } from '../../test/merkle-reference.ts';
import { TileLog } from './stamp-many-log.ts';
import { RateBudget } from './stamp-many-pacing.ts';

/** A clock that moves only when slept on, and the waits asked of it. */
function fakeTime() {
  let nowMs = 1_000_000;
  const waits: number[] = [];
  return {
    now: () => nowMs,
    sleep: async (ms: number) => {
      waits.push(ms);
      nowMs += ms;
    },
    advance: (ms: number) => (nowMs += ms),
    waits,
  };
}

const limited = (remaining: number, resetSeconds: number, quota = 60) =>
  new Headers({
    ratelimit: `"default";r=${remaining};t=${resetSeconds}`,
    'ratelimit-policy': `"default";q=${quota};w=60`,
  });

describe('RateBudget', () => {
  test('without RateLimit fields (no limit) it never waits', async () => {
    const time = fakeTime();
    const budget = new RateBudget(time.sleep, time.now);
    budget.observe(new Headers({ 'content-type': 'application/json' }));
    for (let i = 0; i < 100; i++) await budget.pace(10);
    assert.deepEqual(time.waits, []);
  });

  test('spends what is left, then waits for the reset before a request it cannot pay', async () => {
    const time = fakeTime();
    const budget = new RateBudget(time.sleep, time.now);
    budget.observe(limited(12, 30));
    await budget.pace(10);
    await budget.pace(1);
    await budget.pace(1);
    assert.deepEqual(time.waits, [], 'twelve requests were left');
    await budget.pace(10);
    assert.deepEqual(time.waits, [30_250], 'until the window resets (and a quarter second more)');
    assert.equal(budget.state?.remaining, 50, 'a fresh window of 60, less the 10 just sent');
    // The service's own count replaces the estimate.
    budget.observe(limited(3, 20));
    await budget.pace(2);
    await budget.pace(2);
    assert.equal(time.waits.length, 2);
  });

  test('a window that reset while no request was sent is whole again without a wait', async () => {
    const time = fakeTime();
    const budget = new RateBudget(time.sleep, time.now);
    budget.observe(limited(0, 5));
    time.advance(6_000);
    await budget.pace(10);
    assert.deepEqual(time.waits, []);
    assert.equal(budget.state?.remaining, 50);
  });

  test('tells each wait to onWait before it starts', async () => {
    const time = fakeTime();
    const budget = new RateBudget(time.sleep, time.now);
    const heard: number[] = [];
    budget.onWait = (ms) => heard.push(ms);
    budget.observe(limited(0, 2));
    await budget.pace(1);
    assert.deepEqual(heard, [2_250]);
  });
});

/** A log of `size` leaves served as C2SP hash tiles and entry bundles, counting the tiles read. */
function tiledLog(size: number) {
  const entries = Array.from({ length: size }, (_, i) => Buffer.from(`entry ${i}`));
  const levels: Buffer[][] = [entries.map((entry) => leafHash(entry))];
  while (levels.at(-1)!.length > 1) {
    const below = levels.at(-1)!;
    const above: Buffer[] = [];
    for (let i = 0; i + 1 < below.length; i += 2) above.push(nodeHash(below[i]!, below[i + 1]!));
    levels.push(above);
  }
  const reads: string[] = [];
  const read = async (level: number | 'entries', index: number, width: number) => {
    reads.push(`${level}/${index}/${width}`);
    const first = index * TILE_WIDTH;
    if (level === 'entries')
      return Buffer.concat(
        entries.slice(first, first + width).flatMap((entry) => {
          const length = Buffer.alloc(2);
          length.writeUInt16BE(entry.length);
          return [length, entry];
        }),
      );
    const hashes = levels[level * TILE_HEIGHT]!.slice(first, first + width);
    assert.equal(hashes.length, width, `tile ${level}/${index} is ${width} wide in this tree`);
    return Buffer.concat(hashes);
  };
  return { leaves: levels[0]!, reads, read };
}

describe('TileLog', () => {
  test('inclusion proofs from the tiles equal the reference, each tile read once', async () => {
    const size = 70_000; // three levels of tiles, partial ones at the right edge
    const log = tiledLog(size);
    const tiles = new TileLog(log.read);
    const indexes = [0, 1, 255, 256, 65_535, 65_536, 69_000, 69_999];
    const proofs = await tiles.inclusionProofs(indexes, size);
    for (const [i, index] of indexes.entries())
      assert.deepEqual(
        proofs[i]!.map((hash) => Buffer.from(hash).toString('hex')),
        inclusionProof(index, log.leaves).map((hash) => hash.toString('hex')),
        `leaf ${index}`,
      );
    assert.equal(new Set(log.reads).size, log.reads.length, 'no tile read twice');
  });

  test('the root hashed up from the tiles equals the reference, at any size', async () => {
    const log = tiledLog(70_000);
    const tiles = new TileLog(log.read);
    for (const size of [1, 255, 256, 257, 65_536, 70_000])
      assert.equal(
        Buffer.from(await tiles.root(size)).toString('hex'),
        rootHash(log.leaves.slice(0, size)).toString('hex'),
        `size ${size}`,
      );
  });

  test('consistency proofs from the tiles equal the reference', async () => {
    const log = tiledLog(1_000);
    const tiles = new TileLog(log.read);
    for (const [from, to] of [
      [1, 1_000],
      [256, 700],
      [333, 1_000],
      [999, 1_000],
    ] as const) {
      const proof = await tiles.consistencyProof(from, to);
      assert.deepEqual(
        proof.map((hash) => Buffer.from(hash).toString('hex')),
        consistencyProof(from, log.leaves.slice(0, to)).map((hash) => hash.toString('hex')),
        `${from} → ${to}`,
      );
    }
  });

  test('entries are read from the bundles, from any index', async () => {
    const log = tiledLog(600);
    const tiles = new TileLog(log.read);
    const seen: [number, string][] = [];
    await tiles.entries(250, 520, 600, (index, entry) => seen.push([index, entry.toString()]));
    assert.equal(seen.length, 270);
    assert.deepEqual(seen[0], [250, 'entry 250']);
    assert.deepEqual(seen.at(-1), [519, 'entry 519']);
    assert.deepEqual(log.reads, ['entries/0/256', 'entries/1/256', 'entries/2/88']);
  });
});
