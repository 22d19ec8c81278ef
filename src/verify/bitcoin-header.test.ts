import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mainnetHeaders } from '../../test/bitcoin-headers.ts';
import { bitcoinBlockHash, checkBitcoinHeader, parseBitcoinHeader } from './bitcoin-header.ts';

/**
 * Real mainnet headers: the genesis block, written from its fields as python3-bitcoinlib's tests give
 * them (bitcoin/tests/test_core.py), and block 1 as python3-opentimestamps' tests hold it.
 */
const genesis = (() => {
  const header = Buffer.alloc(80);
  header.writeInt32LE(1, 0);
  Buffer.from('4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b', 'hex')
    .reverse()
    .copy(header, 36);
  header.writeUInt32LE(1231006505, 68);
  header.writeUInt32LE(486604799, 72);
  header.writeUInt32LE(2083236893, 76);
  return header;
})();
const GENESIS_HASH = '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f';
const BLOCK1_HASH = '00000000839a8e6886ab5951d76f411475428afc90947ee320161bbf18eb6048';
const BLOCK1_ROOT = Buffer.from(
  '0e3e2357e806b6cdb1f70b54c3a3a17b6714ee1f0e68bebb44a74b1efd512098',
  'hex',
).reverse();

test('a header is read field by field, and its block hash is its double SHA-256 reversed', () => {
  assert.equal(bitcoinBlockHash(genesis), GENESIS_HASH);
  const { block1 } = mainnetHeaders();
  const parsed = parseBitcoinHeader(block1);
  assert.equal(parsed.hash, BLOCK1_HASH);
  assert.equal(parsed.previousHash, GENESIS_HASH);
  assert.deepEqual(parsed.merkleRoot, BLOCK1_ROOT);
  assert.equal(parsed.time, 1231469665);
  assert.throws(() => parseBitcoinHeader(block1.subarray(0, 79)), /80 bytes, not 79/);
});

test('a header bears out a claim only with its hash, the attested Merkle root and a time not too early', () => {
  const { block1 } = mainnetHeaders();
  const claim = {
    height: 1,
    blockHash: BLOCK1_HASH,
    merkleRoot: BLOCK1_ROOT,
    notBefore: Date.UTC(2009, 0, 1),
  };
  assert.equal(checkBitcoinHeader(block1, claim), undefined);
  assert.match(checkBitcoinHeader(block1, { ...claim, blockHash: GENESIS_HASH })!, /hashes to 00000000839a/);
  assert.match(
    checkBitcoinHeader(block1, { ...claim, merkleRoot: Buffer.from(BLOCK1_ROOT).reverse() })!,
    /block 1 has the Merkle root 98205/,
  );
  assert.match(
    checkBitcoinHeader(block1, { ...claim, notBefore: Date.UTC(2026, 0, 1) })!,
    /block 1 is dated 2009-01-09T02:54:25.000Z, before 2026/,
  );
  assert.match(checkBitcoinHeader(genesis, { ...claim, blockHash: undefined })!, /Merkle root 3ba3edfd/);
  assert.match(checkBitcoinHeader(Buffer.alloc(81), claim)!, /80 bytes/);
});
