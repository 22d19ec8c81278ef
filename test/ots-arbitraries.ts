import fc from 'fast-check';
import { applyOp, type OtsAttestation, type OtsOp, type OtsTimestamp } from '../src/core/opentimestamps.ts';

/** fast-check arbitraries of OpenTimestamps operations, attestations and whole timestamps. */

const bytes = (minLength: number, maxLength: number) =>
  fc.uint8Array({ minLength, maxLength }).map((array) => Buffer.from(array));

export const opArb: fc.Arbitrary<OtsOp> = fc.oneof(
  fc.constantFrom<OtsOp>(
    { op: 'sha256' },
    { op: 'sha1' },
    { op: 'ripemd160' },
    { op: 'hexlify' },
    { op: 'reverse' },
    { op: 'keccak256' },
  ),
  fc.record({ op: fc.constantFrom('append' as const, 'prepend' as const), arg: bytes(1, 40) }),
);

/** The tags the reference reads as attestations of its own (pending, Bitcoin, Litecoin, Ethereum). */
const KNOWN_TAGS = ['83dfe30d2ef90c8e', '0588960d73d71901', '06869a0d73d71b45', '30fe8087b5c7ead7'];

export const attestationArb: fc.Arbitrary<OtsAttestation> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._/:-]{0,80}$/).map((uri) => ({ kind: 'pending' as const, uri })),
  fc
    .integer({ min: 0, max: Number.MAX_SAFE_INTEGER })
    .map((height) => ({ kind: 'bitcoin' as const, height })),
  fc
    .record({ tag: bytes(8, 8), payload: bytes(0, 40) })
    .filter(({ tag }) => !KNOWN_TAGS.includes(tag.toString('hex')))
    .map(({ tag, payload }) => ({ kind: 'unknown' as const, tag, payload })),
);

interface Shape {
  attestations: OtsAttestation[];
  ops: Array<{ op: OtsOp; next: Shape }>;
}

const shapeArb = (depth: number): fc.Arbitrary<Shape> =>
  depth === 0
    ? fc.record({
        attestations: fc.array(attestationArb, { minLength: 1, maxLength: 2 }),
        ops: fc.constant([]),
      })
    : fc.record({
        attestations: fc.array(attestationArb, { maxLength: 2 }),
        ops: fc.array(fc.record({ op: opArb, next: shapeArb(depth - 1) }), { maxLength: 2 }),
      });

/** A tree of that shape over `msg`; an operation that cannot apply becomes SHA-256, an empty node pending. */
function grow(shape: Shape, msg: Buffer): OtsTimestamp {
  const node: OtsTimestamp = { msg, attestations: [...shape.attestations], ops: [] };
  for (const { op, next } of shape.ops) {
    let used = op;
    let result: Buffer;
    try {
      result = applyOp(op, msg);
    } catch {
      used = { op: 'sha256' };
      result = applyOp(used, msg);
    }
    node.ops.push({ op: used, next: grow(next, result) });
  }
  if (node.ops.length === 0 && node.attestations.length === 0)
    node.attestations.push({ kind: 'pending', uri: 'https://calendar.example' });
  return node;
}

/** Timestamps of a random message (0 to 64 bytes), or of `msgArb`'s messages, up to `depth` deep. */
export const timestampArb = (
  depth = 5,
  msgArb: fc.Arbitrary<Buffer> = bytes(0, 64),
): fc.Arbitrary<OtsTimestamp> => fc.tuple(msgArb, shapeArb(depth)).map(([msg, shape]) => grow(shape, msg));

export const digestArb = bytes(32, 32);
