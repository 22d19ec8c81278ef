import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leafHash } from '../core/merkle.ts';
import { chainTo, proofOps, writeDetachedFile } from '../core/opentimestamps.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { mainnetHeaders } from '../../test/bitcoin-headers.ts';
import { checkAnchors, type ProofAnchors } from './anchor-checks.ts';

/** A proof alone in an anchored tree of one, its .ots leading on to a claim of Bitcoin block 1. */
function claimOfBlock1() {
  const proof = {
    id: 'proof_01TESTBITCOINCLAIM000000000',
    timestamp: '2026-01-01T00:00:00.000Z',
    contentHash: `sha256:${'ab'.repeat(32)}`,
    metadataHash: `sha256:${'cd'.repeat(32)}`,
    label: 'claimed',
  };
  const leaf = Buffer.from(signingMessage(proof), 'utf8');
  const root = leafHash(leaf);
  const contentHash = Buffer.from('ab'.repeat(32), 'hex');
  const ops = proofOps({ leaf, contentHash, leafIndex: 0, treeSize: 1, hashes: [] });
  const claim = chainTo(root, [{ op: 'sha256' }], []);
  claim.ops[0]!.next.attestations.push({ kind: 'bitcoin', height: 1 });
  const anchors: ProofAnchors = {
    proofId: proof.id,
    treeSize: 1,
    rootHash: root.toString('base64'),
    checkpoint: '',
    inclusion: { leafIndex: 0, treeSize: 1, rootHash: root.toString('base64'), hashes: [] },
    rfc3161: [],
    opentimestamps: [{ calendar: 'https://cal.example/ots', status: 'claimed', bitcoinHeight: 1 }],
    ots: writeDetachedFile(contentHash, chainTo(contentHash, ops, [claim])).toString('base64'),
  };
  return { proof, anchors };
}

test('a Bitcoin attestation counts only with its block header: unchecked without one, invalid with a header that does not hold it', () => {
  const { proof, anchors } = claimOfBlock1();
  const find = (checks: ReturnType<typeof checkAnchors>) =>
    checks.find((c) => c.name === 'anchor opentimestamps bitcoin 1');
  assert.deepEqual(find(checkAnchors(proof, anchors, {})), {
    name: 'anchor opentimestamps bitcoin 1',
    status: 'unchecked',
    message: 'Bitcoin block 1 claimed by cal.example, header not checked (--bitcoin-headers URL)',
  });
  const { block1 } = mainnetHeaders();
  const checked = find(checkAnchors(proof, anchors, { bitcoinHeaders: new Map([[1, block1]]) }));
  assert.equal(checked?.status, 'invalid');
  assert.match(checked.message, /block 1 has the Merkle root 98205/);
});
