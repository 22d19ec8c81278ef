import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { vectorsDir } from '../../test/vectors.ts';
import { consistencyProof, inclusionProof, rootHash } from '../../test/merkle-reference.ts';
import { leafHash, verifyConsistency, verifyInclusion } from './merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from './signed-note.ts';
import { parseEntryBundle } from './tlog-tiles.ts';

const LOG = vectorsDir('tessera-log');
const VKEY = 'example.com/log/testdata+33d7b496+AeHTu4Q3hEIMHNqc6fASMsq3rKNx280NI+oO5xCFkkSx';

function entries(): Buffer[] {
  return parseEntryBundle(readFileSync(path.join(LOG, 'tile/entries/000.p/15')));
}

test('leaf hashes of the entry bundle equal the level-0 tile of a real C2SP log', () => {
  const leaves = entries().map(leafHash);
  assert.equal(leaves.length, 15);
  for (let width = 1; width <= 15; width++) {
    const tile = readFileSync(path.join(LOG, `tile/0/000.p/${width}`));
    assert.deepEqual(tile, Buffer.concat(leaves.slice(0, width)), `tile of width ${width}`);
  }
});

test('roots at every size equal the signed checkpoints, whose signatures verify', () => {
  const verifier = parseVerifierKey(VKEY);
  const leaves = entries().map(leafHash);
  for (let size = 1; size <= 15; size++) {
    const checkpoint = parseCheckpoint(
      openNote(readFileSync(path.join(LOG, `checkpoint.${size}`), 'utf8'), verifier),
    );
    assert.equal(checkpoint.origin, 'example.com/log/testdata');
    assert.equal(checkpoint.size, size);
    assert.deepEqual(rootHash(leaves.slice(0, size)), checkpoint.rootHash, `root at ${size}`);
  }
});

test('inclusion proofs for every leaf at every size, and consistency between every pair, verify', () => {
  const leaves = entries().map(leafHash);
  for (let size = 1; size <= 15; size++) {
    const root = rootHash(leaves.slice(0, size));
    for (let i = 0; i < size; i++) {
      assert.ok(
        verifyInclusion(i, size, leaves[i]!, inclusionProof(i, leaves.slice(0, size)), root),
        `${i} in ${size}`,
      );
    }
    for (let old = 1; old <= size; old++) {
      const proof = consistencyProof(old, leaves.slice(0, size));
      assert.ok(
        verifyConsistency(old, size, rootHash(leaves.slice(0, old)), root, proof),
        `${old} → ${size}`,
      );
    }
  }
});

test('RFC 6962 known answers: the empty tree and a one-leaf tree', () => {
  assert.equal(
    rootHash([]).toString('hex'),
    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  );
  assert.equal(
    leafHash(Buffer.alloc(0)).toString('hex'),
    '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  );
});

const flip = (buffer: Uint8Array, bit: number): Buffer => {
  const copy = Buffer.from(buffer);
  copy[Math.floor(bit / 8) % copy.length]! ^= 1 << (bit % 8);
  return copy;
};

test('random logs: every proof verifies, and any single-bit change makes it fail', () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 40 }), { minLength: 1, maxLength: 70 }),
      fc.nat(),
      fc.nat(),
      fc.nat(),
      (raw, a, b, bit) => {
        const leaves = raw.map(leafHash);
        const size = 1 + (a % leaves.length);
        const index = b % size;
        const tree = leaves.slice(0, size);
        const root = rootHash(tree);
        const proof = inclusionProof(index, tree);
        assert.ok(verifyInclusion(index, size, leaves[index]!, proof, root));
        assert.ok(!verifyInclusion(index, size, flip(leaves[index]!, bit), proof, root));
        assert.ok(!verifyInclusion(index, size, leaves[index]!, proof, flip(root, bit)));
        if (proof.length > 0) {
          const at = bit % proof.length;
          assert.ok(
            !verifyInclusion(
              index,
              size,
              leaves[index]!,
              proof.map((h, i) => (i === at ? flip(h, bit) : h)),
              root,
            ),
          );
        }
        if (size > 1)
          assert.ok(
            !verifyInclusion((index + 1) % size, size, leaves[index]!, proof, root) ||
              leaves[(index + 1) % size]!.equals(leaves[index]!),
          );

        const old = 1 + (bit % size);
        const oldRoot = rootHash(leaves.slice(0, old));
        const consistency = consistencyProof(old, tree);
        assert.ok(verifyConsistency(old, size, oldRoot, root, consistency));
        if (old < size) {
          assert.ok(!verifyConsistency(old, size, flip(oldRoot, a), root, consistency));
          assert.ok(!verifyConsistency(old, size, oldRoot, flip(root, a), consistency));
          if (consistency.length > 0) {
            const at = a % consistency.length;
            assert.ok(
              !verifyConsistency(
                old,
                size,
                oldRoot,
                root,
                consistency.map((h, i) => (i === at ? flip(h, b) : h)),
              ),
            );
          }
        }
      },
    ),
    { numRuns: 300 },
  );
});
