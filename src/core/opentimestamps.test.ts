import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { inclusionProof, rootHash } from '../../test/merkle-reference.ts';
import { leafHash, nodeHash, verifyInclusion } from './merkle.ts';
import { inclusionPath, treeRoot, type NodeGetter } from './merkle-tree.ts';
import {
  applyOp,
  attestationsOf,
  chainTo,
  graft,
  OtsFormatError,
  proofOps,
  readTimestamp,
  writeTimestamp,
  type OtsOp,
  type OtsTimestamp,
} from './opentimestamps.ts';
import { signingMessage } from './proof-signature.ts';

const hex = (text: string) => Buffer.from(text, 'hex');
const sha256 = (data: Buffer) => hash('sha256', data, 'buffer');
const run = (start: Buffer, ops: OtsOp[]) => ops.reduce((msg, op) => applyOp(op, msg), start);
const rejects = (action: () => unknown, what: string) =>
  assert.throws(action, (error) => error instanceof OtsFormatError, what);

test('operations give the known answers of their hashes and transformations', () => {
  const abc = Buffer.from('abc');
  const answers: Array<[OtsOp, string]> = [
    [{ op: 'sha256' }, 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
    [{ op: 'sha1' }, 'a9993e364706816aba3e25717850c26c9cd0d89d'],
    [{ op: 'ripemd160' }, '8eb208f7e05d987a9b044a8e98c6b087f15a0bfc'],
    [{ op: 'keccak256' }, '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45'],
    [{ op: 'hexlify' }, Buffer.from('616263').toString('hex')],
    [{ op: 'reverse' }, '636261'],
    [{ op: 'append', arg: hex('00ff') }, '61626300ff'],
    [{ op: 'prepend', arg: hex('00ff') }, '00ff616263'],
  ];
  for (const [op, expected] of answers) assert.equal(applyOp(op, abc).toString('hex'), expected, op.op);
  rejects(() => applyOp({ op: 'hexlify' }, Buffer.alloc(2049)), 'hexlify over 2048 bytes');
  rejects(() => applyOp({ op: 'sha256' }, Buffer.alloc(4097)), 'a message over 4096 bytes');
  rejects(() => applyOp({ op: 'append', arg: Buffer.alloc(4096) }, abc), 'a result over 4096 bytes');
  rejects(() => applyOp({ op: 'prepend', arg: Buffer.alloc(0) }, abc), 'an empty argument');
  rejects(() => applyOp({ op: 'reverse' }, Buffer.alloc(0)), 'reverse of nothing');
  rejects(() => applyOp({ op: 'md5' } as unknown as OtsOp, abc), 'an unknown operation');
});

test('chainTo runs the operations in order and merges the tails at the end; a tail elsewhere is refused', () => {
  const start = sha256(Buffer.from('start'));
  const ops: OtsOp[] = [
    { op: 'append', arg: hex('01') },
    { op: 'sha256' },
    { op: 'prepend', arg: hex('02') },
  ];
  const end = run(start, ops);
  const tailA: OtsTimestamp = { msg: end, attestations: [{ kind: 'pending', uri: 'https://a' }], ops: [] };
  const tailB: OtsTimestamp = {
    msg: end,
    attestations: [{ kind: 'pending', uri: 'https://b' }],
    ops: [
      {
        op: { op: 'sha256' },
        next: { msg: sha256(end), attestations: [{ kind: 'bitcoin', height: 7 }], ops: [] },
      },
    ],
  };
  const t = chainTo(start, ops, [tailA, tailB]);
  assert.deepEqual(
    attestationsOf(t).map(({ msg, attestation }) => [msg.toString('hex'), attestation]),
    [
      [end.toString('hex'), { kind: 'pending', uri: 'https://a' }],
      [end.toString('hex'), { kind: 'pending', uri: 'https://b' }],
      [sha256(end).toString('hex'), { kind: 'bitcoin', height: 7 }],
    ],
  );
  assert.deepEqual(readTimestamp(writeTimestamp(t), start), t);
  rejects(() => chainTo(start, ops, [{ ...tailA, msg: start }]), 'a tail of another message');
});

test('attestationsOf walks every path, and graft replaces a pending attestation with the upgrade', () => {
  const digest = sha256(Buffer.from('document'));
  const toA: OtsOp[] = [{ op: 'append', arg: hex('aa') }, { op: 'sha256' }];
  const toB: OtsOp[] = [{ op: 'append', arg: hex('bb') }, { op: 'sha256' }];
  const commitmentA = run(digest, toA);
  const commitmentB = run(digest, toB);
  const pendingA = chainTo(
    commitmentA,
    [],
    [{ msg: commitmentA, attestations: [{ kind: 'pending', uri: 'https://a' }], ops: [] }],
  );
  const pendingB = chainTo(
    commitmentB,
    [],
    [{ msg: commitmentB, attestations: [{ kind: 'pending', uri: 'https://b' }], ops: [] }],
  );
  const t = chainTo(digest, [], [chainTo(digest, toA, [pendingA]), chainTo(digest, toB, [pendingB])]);
  assert.deepEqual(
    attestationsOf(t).map(({ msg, attestation }) => [msg, attestation]),
    [
      [commitmentA, { kind: 'pending', uri: 'https://a' }],
      [commitmentB, { kind: 'pending', uri: 'https://b' }],
    ],
  );
  const upgradeOps: OtsOp[] = [{ op: 'prepend', arg: hex('0102') }, { op: 'sha256' }, { op: 'sha256' }];
  const root = run(commitmentA, upgradeOps);
  const upgrade = chainTo(commitmentA, upgradeOps, [
    { msg: root, attestations: [{ kind: 'bitcoin', height: 9 }], ops: [] },
  ]);
  const before = writeTimestamp(t);
  const grafted = graft(t, upgrade);
  assert.deepEqual(writeTimestamp(t), before, 'the original is left as it was');
  assert.deepEqual(
    attestationsOf(grafted).map(({ msg, attestation }) => [msg, attestation]),
    [
      [root, { kind: 'bitcoin', height: 9 }],
      [commitmentB, { kind: 'pending', uri: 'https://b' }],
    ],
  );
  rejects(() => graft(t, { ...upgrade, msg: root }), 'an upgrade for a message the timestamp lacks');
});

const leafArb = fc
  .record({
    contentHash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes)),
    label: fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 })),
    at: fc.integer({ min: 0, max: 2 ** 41 }),
  })
  .map(({ contentHash, label, at }) => ({
    contentHash,
    leaf: Buffer.from(
      signingMessage({
        id: `proof_${at.toString(36).padStart(26, '0')}`,
        timestamp: new Date(at).toISOString(),
        contentHash: `sha256:${contentHash.toString('hex')}`,
        metadataHash: `sha256:${sha256(Buffer.from(label)).toString('hex')}`,
        // Sometimes the label holds the content hash field itself: its quotes are escaped in the leaf.
        label: label.length % 5 === 0 ? `"contentHash":"sha256:${contentHash.toString('hex')}"` : label,
      }),
    ),
  }));

test('proofOps carries the content hash to the root RFC 9162 computes, for every leaf of random logs', () => {
  fc.assert(
    fc.property(fc.array(leafArb, { minLength: 1, maxLength: 40 }), fc.nat(), (entries, pick) => {
      const leaves = entries.map(({ leaf }) => leafHash(leaf));
      const root = rootHash(leaves);
      const leafIndex = pick % entries.length;
      const { leaf, contentHash } = entries[leafIndex]!;
      const hashes = inclusionProof(leafIndex, leaves);
      const ops = proofOps({ leaf, contentHash, leafIndex, treeSize: leaves.length, hashes });
      assert.deepEqual(run(contentHash, ops), root);
      assert.ok(verifyInclusion(leafIndex, leaves.length, leafHash(leaf), hashes, root));
      assert.deepEqual(ops.slice(0, 1), [{ op: 'hexlify' }]);
      assert.equal(ops.length, 5 + 3 * hashes.length);
    }),
  );
});

test("proofOps matches the log's own tree code (merkle-tree.ts) in trees of up to 2^36 leaves", () => {
  fc.assert(
    fc.property(
      leafArb,
      fc.integer({ min: 1, max: 2 ** 36 }),
      fc.nat(),
      ({ leaf, contentHash }, treeSize, pick) => {
        const leafIndex = pick % treeSize;
        // Stored nodes of a tree of unknown leaves, but for the subtrees over ours, computed from below.
        const ours = [leafHash(leaf)];
        const get: NodeGetter = (level, index) => {
          if (index !== Math.floor(leafIndex / 2 ** level)) return sha256(Buffer.from(`${level}/${index}`));
          for (let l = ours.length; l <= level; l++) {
            const below = Math.floor(leafIndex / 2 ** (l - 1));
            const sibling = get(l - 1, below % 2 === 0 ? below + 1 : below - 1);
            ours.push(below % 2 === 0 ? nodeHash(ours[l - 1]!, sibling) : nodeHash(sibling, ours[l - 1]!));
          }
          return ours[level]!;
        };
        const hashes = inclusionPath(leafIndex, treeSize, get).map((h) => Buffer.from(h));
        const ops = proofOps({ leaf, contentHash, leafIndex, treeSize, hashes });
        assert.deepEqual(run(contentHash, ops), Buffer.from(treeRoot(treeSize, get)));
      },
    ),
  );
});

test('proofOps refuses a leaf without the hash, a path of the wrong length, an index outside the tree', () => {
  const contentHash = sha256(Buffer.from('x'));
  const leaves = ['a', 'b', 'c', 'd', 'e'].map((label) =>
    Buffer.from(
      signingMessage({
        id: `proof_${label}`,
        timestamp: '2026-01-01T00:00:00.000Z',
        contentHash: `sha256:${contentHash.toString('hex')}`,
        metadataHash: `sha256:${contentHash.toString('hex')}`,
        label,
      }),
    ),
  );
  const hashes = inclusionProof(2, leaves.map(leafHash));
  const input = { leaf: leaves[2]!, contentHash, leafIndex: 2, treeSize: 5, hashes };
  assert.equal(proofOps(input).length, 5 + 3 * hashes.length);
  rejects(() => proofOps({ ...input, contentHash: sha256(Buffer.from('y')) }), 'another content hash');
  rejects(
    () => proofOps({ ...input, leaf: Buffer.from(input.leaf.toString().toUpperCase()) }),
    'uppercase hex',
  );
  rejects(() => proofOps({ ...input, hashes: hashes.slice(1) }), 'a path too short');
  rejects(() => proofOps({ ...input, hashes: [...hashes, hashes[0]!] }), 'a path too long');
  rejects(() => proofOps({ ...input, hashes: [hashes[0]!.subarray(1), ...hashes.slice(1)] }), 'a short hash');
  rejects(() => proofOps({ ...input, leafIndex: 5 }), 'an index outside the tree');
  rejects(() => proofOps({ ...input, treeSize: 0, leafIndex: 0 }), 'an empty tree');
});
