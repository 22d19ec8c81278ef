import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { keccak256 as viemKeccak256 } from 'viem';
import { keccak256 } from './keccak.ts';

test('Keccak-256 known answers: the empty message and "abc"', () => {
  assert.equal(
    keccak256(Buffer.alloc(0)).toString('hex'),
    'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470',
  );
  assert.equal(
    keccak256(Buffer.from('abc')).toString('hex'),
    '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45',
  );
});

test('Keccak-256 equals viem (@noble/hashes) on messages of every length up to 4096 bytes', () => {
  for (let length = 0; length <= 300; length++) {
    const message = Buffer.alloc(length, length);
    assert.equal(keccak256(message).toString('hex'), viemKeccak256(message).slice(2), `${length} bytes`);
  }
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 4096 }), (message) => {
      assert.equal(keccak256(message).toString('hex'), viemKeccak256(message).slice(2));
    }),
  );
});
