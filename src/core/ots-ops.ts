import { hash } from 'node:crypto';
import { keccak256 } from './keccak.ts';

/**
 * OpenTimestamps operations (the edges of a timestamp's tree), their tags and their limits, as the
 * reference implementation defines them (github.com/opentimestamps/python-opentimestamps,
 * opentimestamps/core/op.py).
 */

export type OtsOp =
  | { op: 'append'; arg: Buffer }
  | { op: 'prepend'; arg: Buffer }
  | { op: 'sha256' }
  | { op: 'sha1' }
  | { op: 'ripemd160' }
  | { op: 'hexlify' }
  | { op: 'reverse' }
  | { op: 'keccak256' };

/** Anything that is not a well-formed timestamp, or an operation that cannot be applied. */
export class OtsFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OtsFormatError';
  }
}

/** No message or operation result is longer (op.py, MAX_RESULT_LENGTH). */
export const MAX_MSG = 4096;

export const OP_TAGS = {
  sha1: 0x02,
  ripemd160: 0x03,
  sha256: 0x08,
  keccak256: 0x67,
  append: 0xf0,
  prepend: 0xf1,
  reverse: 0xf2,
  hexlify: 0xf3,
} as const;
const OP_BY_TAG = new Map(Object.entries(OP_TAGS).map(([name, tag]) => [tag as number, name]));

export const fail = (message: string): never => {
  throw new OtsFormatError(message);
};

/** The operation of a tag; `arg` reads the argument of those that have one. */
export function opOfTag(tag: number, arg: () => Buffer): OtsOp {
  const name = OP_BY_TAG.get(tag) ?? fail(`unknown operation tag 0x${tag.toString(16)}`);
  return name === 'append' || name === 'prepend' ? { op: name, arg: arg() } : ({ op: name } as OtsOp);
}

export function applyOp(op: OtsOp, msg: Buffer): Buffer {
  const limit = op.op === 'hexlify' ? MAX_MSG / 2 : MAX_MSG;
  if (msg.length > limit) fail(`${op.op} of a message longer than ${limit} bytes`);
  let result: Buffer;
  switch (op.op) {
    case 'append':
    case 'prepend':
      if (!Buffer.isBuffer(op.arg) || op.arg.length < 1 || op.arg.length > MAX_MSG)
        fail(`${op.op} needs an argument of 1 to ${MAX_MSG} bytes`);
      result = Buffer.concat(op.op === 'append' ? [msg, op.arg] : [op.arg, msg]);
      break;
    case 'sha256':
    case 'sha1':
    case 'ripemd160':
      result = hash(op.op, msg, 'buffer');
      break;
    case 'keccak256':
      result = keccak256(msg);
      break;
    case 'hexlify':
    case 'reverse':
      if (msg.length === 0) fail(`${op.op} of an empty message`);
      result = op.op === 'hexlify' ? Buffer.from(msg.toString('hex'), 'latin1') : Buffer.from(msg).reverse();
      break;
    default:
      return fail(`unknown operation ${String((op as { op: unknown }).op)}`);
  }
  if (result.length > MAX_MSG) fail(`${op.op} gives more than ${MAX_MSG} bytes`);
  return result;
}

/** The order the reference writes operations in: by tag, then by argument. */
export function compareOps(a: OtsOp, b: OtsOp): number {
  const byTag = OP_TAGS[a.op] - OP_TAGS[b.op];
  if (byTag !== 0) return byTag;
  return 'arg' in a && 'arg' in b ? Buffer.compare(a.arg, b.arg) : 0;
}
