import { createHash } from 'node:crypto';

/**
 * Bitcoin block headers, for checking what an OpenTimestamps calendar claims: that a Bitcoin block
 * holds a message as its Merkle root. A header is 80 bytes: version, previous block hash, Merkle root
 * (as Bitcoin stores it, the byte order an OpenTimestamps attestation is compared in, as
 * python-opentimestamps' `verify_against_blockheader` does), time, bits and nonce, integers little
 * endian. The block's hash is the double SHA-256 of those bytes, written in reverse byte order.
 */

export const HEADER_BYTES = 80;

export interface BitcoinHeader {
  version: number;
  /** The previous block's hash, as block hashes are written (reversed hex). */
  previousHash: string;
  /** The Merkle root, in the header's own byte order. */
  merkleRoot: Buffer;
  /** Seconds since 1970, as the miner set it. */
  time: number;
  bits: number;
  nonce: number;
  /** The block's hash, as block hashes are written (reversed hex). */
  hash: string;
}

const sha256d = (data: Buffer): Buffer =>
  createHash('sha256').update(createHash('sha256').update(data).digest()).digest();
const reversedHex = (bytes: Buffer): string => Buffer.from(bytes).reverse().toString('hex');

/** Reads an 80-byte header; throws on any other length. */
export function parseBitcoinHeader(header: Buffer): BitcoinHeader {
  if (header.length !== HEADER_BYTES)
    throw new Error(`a Bitcoin block header is ${HEADER_BYTES} bytes, not ${header.length}`);
  return {
    version: header.readInt32LE(0),
    previousHash: reversedHex(header.subarray(4, 36)),
    merkleRoot: Buffer.from(header.subarray(36, 68)),
    time: header.readUInt32LE(68),
    bits: header.readUInt32LE(72),
    nonce: header.readUInt32LE(76),
    hash: reversedHex(sha256d(header)),
  };
}

/** The block hash of a header (reversed hex, as explorers and nodes write it). */
export const bitcoinBlockHash = (header: Buffer): string => parseBitcoinHeader(header).hash;

/**
 * Checks a header against a calendar's claim: it is 80 bytes, hashes to `blockHash` when given (the
 * hash a header server named for the block at `height`), its Merkle root is `merkleRoot` (the message
 * the attestation is on), and its time is no earlier than `notBefore` (ms since 1970). Returns what is
 * wrong, or undefined when the header bears the claim out.
 */
export function checkBitcoinHeader(
  header: Buffer,
  claim: { height?: number; blockHash?: string; merkleRoot: Buffer; notBefore: number },
): string | undefined {
  const block = claim.height === undefined ? 'the block' : `block ${claim.height}`;
  let parsed: BitcoinHeader;
  try {
    parsed = parseBitcoinHeader(header);
  } catch (error) {
    return (error as Error).message;
  }
  if (claim.blockHash !== undefined && parsed.hash !== claim.blockHash.toLowerCase())
    return `the header of ${block} hashes to ${parsed.hash}, not to its block hash ${claim.blockHash}`;
  if (!parsed.merkleRoot.equals(claim.merkleRoot))
    return (
      `${block} has the Merkle root ${parsed.merkleRoot.toString('hex')}, not the attested ` +
      `${claim.merkleRoot.toString('hex')}`
    );
  if (parsed.time * 1000 < claim.notBefore)
    return (
      `${block} is dated ${new Date(parsed.time * 1000).toISOString()}, before ` +
      `${new Date(claim.notBefore).toISOString()}: it cannot hold what came after it`
    );
  return undefined;
}
