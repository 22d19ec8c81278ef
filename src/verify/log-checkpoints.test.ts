import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { consistencyProof, rootHash } from '../../test/merkle-reference.ts';
import { leafHash } from '../core/merkle.ts';
import { formatCheckpoint, formatVerifierKey, signNote } from '../core/signed-note.ts';
import { compareCheckpoints, openCheckpoint, readCheckpoint, type LogCheckpoint } from './log-checkpoints.ts';

const ORIGIN = 'proofs.example.com/log';
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const VKEY = formatVerifierKey(ORIGIN, publicKey);

/** The signed checkpoint of a log's first `size` leaf hashes, opened as a verifier opens it. */
function checkpointOf(leaves: readonly Buffer[], size: number): LogCheckpoint {
  const body = formatCheckpoint({
    origin: ORIGIN,
    size,
    rootHash: rootHash(leaves.slice(0, size)),
    extensions: [],
  });
  return openCheckpoint(signNote(body, ORIGIN, privateKey, publicKey), VKEY);
}

/** The consistency proof the log of `leaves` gives between two sizes (none for equal sizes or from 0). */
function proofOf(leaves: readonly Buffer[], from: number, to: number): Buffer[] {
  return from === 0 || from === to ? [] : consistencyProof(from, leaves.slice(0, to));
}

test('two logs sharing a prefix: a checkpoint of one extends one of the other exactly when the smaller tree is within the prefix', () => {
  fc.assert(
    fc.property(
      fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 20 }),
      fc.array(fc.uint8Array({ maxLength: 8 }), { minLength: 1, maxLength: 20 }),
      fc.array(fc.uint8Array({ maxLength: 8 }), { minLength: 1, maxLength: 20 }),
      fc.nat(),
      fc.nat(),
      (shared, ownA, ownB, pickA, pickB) => {
        // Two logs that agree on `shared` and then differ in their next entry.
        fc.pre(!Buffer.from(ownA[0]!).equals(Buffer.from(ownB[0]!)));
        const logA = [...shared, ...ownA].map((e) => leafHash(e));
        const logB = [...shared, ...ownB].map((e) => leafHash(e));
        const a = pickA % (logA.length + 1);
        const b = pickB % (logB.length + 1);
        const known = checkpointOf(logA, a);
        const fresh = checkpointOf(logB, b);
        // The proof comes from the log holding the larger tree, the one that answers the consistency request.
        const [from, to, larger] = b >= a ? [a, b, logB] : [b, a, logA];
        const comparison = compareCheckpoints(known, fresh, proofOf(larger, from, to));
        const isPrefix = Math.min(a, b) <= shared.length;
        assert.equal(comparison.consistent, isPrefix, `sizes ${a}, ${b}, shared ${shared.length}`);
        // A fork stays detected whichever log is asked for the proof, and when no proof comes at all.
        if (!isPrefix) {
          const other = b >= a ? logA : logB;
          if (to <= other.length)
            assert.equal(compareCheckpoints(known, fresh, proofOf(other, from, to)).consistent, false);
          assert.equal(compareCheckpoints(known, fresh, undefined).consistent, false);
        }
        if (comparison.consistent)
          assert.equal(comparison.growth, a === b ? 'same' : b > a ? 'grew' : 'older');
      },
    ),
    { numRuns: 300 },
  );
});

test('a checkpoint that does not verify with the log key is refused; a kept one reads back', () => {
  const leaves = [Buffer.from('a'), Buffer.from('b')].map((e) => leafHash(e));
  const checkpoint = checkpointOf(leaves, 2);
  assert.deepEqual(readCheckpoint(checkpoint.note), checkpoint);
  const other = generateKeyPairSync('ed25519');
  assert.throws(() => openCheckpoint(checkpoint.note, formatVerifierKey(ORIGIN, other.publicKey)));
  assert.throws(() => openCheckpoint(checkpoint.note.replace('\n2\n', '\n3\n'), VKEY), /does not verify/);
});

test('equal sizes need equal roots; the empty tree is a prefix of every tree; another log never compares', () => {
  const leaves = ['x', 'y', 'z'].map((e) => leafHash(Buffer.from(e)));
  const other = ['x', 'y', 'w'].map((e) => leafHash(Buffer.from(e)));
  assert.deepEqual(compareCheckpoints(checkpointOf(leaves, 3), checkpointOf(leaves, 3), []), {
    consistent: true,
    growth: 'same',
  });
  assert.equal(compareCheckpoints(checkpointOf(leaves, 3), checkpointOf(other, 3), []).consistent, false);
  assert.deepEqual(compareCheckpoints(checkpointOf(leaves, 0), checkpointOf(other, 3), []), {
    consistent: true,
    growth: 'grew',
  });
  const foreign = { ...checkpointOf(leaves, 3), origin: 'elsewhere.example/log' };
  assert.equal(compareCheckpoints(checkpointOf(leaves, 2), foreign, proofOf(leaves, 2, 3)).consistent, false);
});
