import { applyOp, OtsFormatError, type OtsOp } from './ots-ops.ts';
import { copy, mergeInto, type OtsAttestation, type OtsTimestamp } from './ots-codec.ts';

/**
 * OpenTimestamps (https://opentimestamps.org) for hashproof: the format (ots-ops.ts, ots-codec.ts), and
 * how a proof's content hash is carried to the root of the transparency log, which is what a calendar is
 * asked to timestamp (docs/decisions.md, "OpenTimestamps written by a small module of our own").
 */

export { applyOp, OtsFormatError, type OtsOp } from './ots-ops.ts';
export {
  readDetachedFile,
  readTimestamp,
  writeDetachedChain,
  writeDetachedFile,
  writeTimestamp,
  type OtsAttestation,
  type OtsTimestamp,
} from './ots-codec.ts';

/**
 * A timestamp of `start` that runs through `ops` one after another; each of `tails` (a calendar's reply,
 * say) must be a timestamp of the chain's last message and is merged there.
 */
export function chainTo(start: Buffer, ops: OtsOp[], tails: OtsTimestamp[]): OtsTimestamp {
  const root: OtsTimestamp = { msg: Buffer.from(start), attestations: [], ops: [] };
  let last = root;
  for (const op of ops) {
    const next: OtsTimestamp = { msg: applyOp(op, last.msg), attestations: [], ops: [] };
    last.ops.push({ op, next });
    last = next;
  }
  for (const tail of tails) {
    if (!tail.msg.equals(last.msg)) throw new OtsFormatError('a tail is not a timestamp of the last message');
    mergeInto(last, tail);
  }
  return root;
}

/** Every attestation, with the message it attests, path by path (depth first, in the tree's order). */
export function attestationsOf(t: OtsTimestamp): Array<{ msg: Buffer; attestation: OtsAttestation }> {
  const found: Array<{ msg: Buffer; attestation: OtsAttestation }> = [];
  const visit = (node: OtsTimestamp) => {
    for (const attestation of node.attestations) found.push({ msg: node.msg, attestation });
    for (const { next } of node.ops) visit(next);
  };
  visit(t);
  return found;
}

/**
 * A copy of `t` in which every node of `upgrade.msg` (a commitment a calendar has since timestamped)
 * loses its pending attestations and gains what `upgrade` holds. Throws if `t` has no such node.
 */
export function graft(t: OtsTimestamp, upgrade: OtsTimestamp): OtsTimestamp {
  const result = copy(t);
  const targets: OtsTimestamp[] = [];
  const visit = (node: OtsTimestamp) => {
    if (node.msg.equals(upgrade.msg)) targets.push(node);
    for (const { next } of node.ops) visit(next);
  };
  visit(result);
  if (targets.length === 0) throw new OtsFormatError("the upgrade's message is not in the timestamp");
  for (const node of targets) {
    node.attestations = node.attestations.filter((a) => a.kind !== 'pending');
    mergeInto(node, upgrade);
  }
  return result;
}

const HASH_BYTES = 32;

/**
 * The operations from a proof's content hash (32 bytes) to the log's root, for the log leaf `leaf` (the
 * proof's signing message, holding `"contentHash":"sha256:<64 lowercase hex>"`) at `leafIndex` of the
 * tree of `treeSize` with the audit path `hashes` (RFC 9162 §2.1.3): hexlify the hash, add the bytes of the
 * leaf before and after it, prepend 0x00 and SHA-256 (the leaf hash, §2.1.1); then per audit path hash,
 * put it on its side, prepend 0x01 and SHA-256 (an interior node). The sides are those
 * `verifyInclusion` (merkle.ts) takes.
 */
export function proofOps(input: {
  leaf: Buffer;
  contentHash: Buffer;
  leafIndex: number;
  treeSize: number;
  hashes: Buffer[];
}): OtsOp[] {
  const { leaf, contentHash, leafIndex, treeSize, hashes } = input;
  if (contentHash.length !== HASH_BYTES) throw new OtsFormatError('a content hash is 32 bytes');
  const field = Buffer.from(`"contentHash":"sha256:${contentHash.toString('hex')}"`);
  const at = leaf.indexOf(field);
  if (at < 0 || leaf.indexOf(field, at + 1) >= 0)
    throw new OtsFormatError('the leaf does not hold the content hash once');
  const start = at + field.length - 1 - 2 * HASH_BYTES;
  const before = leaf.subarray(0, start);
  const after = leaf.subarray(start + 2 * HASH_BYTES);
  const ops: OtsOp[] = [{ op: 'hexlify' }];
  if (before.length > 0) ops.push({ op: 'prepend', arg: Buffer.from(before) });
  if (after.length > 0) ops.push({ op: 'append', arg: Buffer.from(after) });
  ops.push({ op: 'prepend', arg: Buffer.from([0x00]) }, { op: 'sha256' });

  if (
    !Number.isSafeInteger(leafIndex) ||
    !Number.isSafeInteger(treeSize) ||
    leafIndex < 0 ||
    leafIndex >= treeSize
  )
    throw new OtsFormatError('the leaf index is outside the tree');
  // The walk of RFC 9162 §2.1.3.2, as verifyInclusion takes it.
  let fn = leafIndex;
  let sn = treeSize - 1;
  for (const hash of hashes) {
    if (sn === 0) throw new OtsFormatError('the audit path is longer than the tree is deep');
    if (hash.length !== HASH_BYTES) throw new OtsFormatError('an audit path hash is 32 bytes');
    const left = fn % 2 === 1 || fn === sn;
    ops.push({ op: left ? 'prepend' : 'append', arg: Buffer.from(hash) });
    ops.push({ op: 'prepend', arg: Buffer.from([0x01]) }, { op: 'sha256' });
    if (left && fn % 2 === 0) {
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  if (sn !== 0) throw new OtsFormatError('the audit path is shorter than the tree is deep');
  return ops;
}
