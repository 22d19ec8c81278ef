import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createIdGenerator, isProofId } from './ids.ts';

test('ids from one generator are well formed, unique and sort by creation, even within a millisecond', () => {
  const ids = createIdGenerator();
  const made: string[] = [];
  for (let ms = 1_700_000_000_000; ms < 1_700_000_000_050; ms++) {
    for (let i = 0; i < 100; i++) made.push(ids.next('proof', ms));
  }
  assert.ok(made.every(isProofId));
  assert.equal(new Set(made).size, made.length);
  assert.deepEqual(
    made.toSorted((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    made,
  );
});

test('the random part of new milliseconds uses every character of the alphabet', () => {
  const ids = createIdGenerator();
  const seen = new Map<string, number>();
  // One id per millisecond: each draws 16 fresh random characters (more than one pool of 4096 bytes).
  for (let ms = 0; ms < 2_000; ms++) {
    for (const char of ids.next('proof', 1_700_000_000_000 + ms).slice(-16)) {
      seen.set(char, (seen.get(char) ?? 0) + 1);
    }
  }
  assert.equal(seen.size, 32);
  // 32,000 draws over 32 characters: about 1,000 each; a skewed source would leave some far off.
  for (const [char, count] of seen) assert.ok(count > 800 && count < 1200, `${char}: ${count}`);
});
