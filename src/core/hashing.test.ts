import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metadataHash, metadataKeys, normalizeContentHash, sha256Hex } from './hashing.ts';

test('sha256Hex matches the FIPS 180-4 answer for "test"', () => {
  assert.equal(sha256Hex('test'), '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08');
});

test('absent metadata hashes as {}', () => {
  // sha256("{}") computed independently with sha256sum
  const empty = 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a';
  assert.equal(metadataHash(undefined), empty);
  assert.equal(metadataHash({}), empty);
});

test('metadataHash is over the canonical form, so key order does not matter', () => {
  const expected = 'sha256:d0f56dda38d34376527524ddd98f7ec117d5cbfb240f86e11bfb9d2d01a717d9'; // sha256('{"a":[1,2],"b":"x"}')
  assert.equal(metadataHash({ b: 'x', a: [1, 2] }), expected);
  assert.equal(metadataHash({ a: [1, 2], b: 'x' }), expected);
  assert.notEqual(metadataHash({ a: [2, 1], b: 'x' }), expected);
});

test('metadataKeys are the sorted top-level names only', () => {
  assert.deepEqual(metadataKeys({ zeta: { inner: 1 }, alpha: 1, Beta: 2 }), ['Beta', 'alpha', 'zeta']);
  assert.deepEqual(metadataKeys(undefined), []);
});

test('content hashes are stored lowercase and must have 64 hex digits', () => {
  const upper = 'sha256:' + 'AB'.repeat(32);
  assert.equal(normalizeContentHash(upper), 'sha256:' + 'ab'.repeat(32));
  assert.throws(() => normalizeContentHash('sha256:' + 'a'.repeat(63)));
  assert.throws(() => normalizeContentHash('SHA256:' + 'a'.repeat(64)));
});
