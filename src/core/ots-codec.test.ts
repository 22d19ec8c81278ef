import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import { digestArb, timestampArb } from '../../test/ots-arbitraries.ts';
import { describedAttestations, reference, sortedDescriptions } from '../../test/ots-reference.ts';
import {
  OtsFormatError,
  readDetachedFile,
  readTimestamp,
  writeDetachedFile,
  writeTimestamp,
  type OtsTimestamp,
} from './opentimestamps.ts';

const hex = (text: string) => Buffer.from(text.replace(/\s/g, ''), 'hex');
const ZERO = Buffer.alloc(32);
const PENDING_TAG = '83dfe30d2ef90c8e';
const MAGIC = '004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294';

/** append 01, sha256, pending "http://x": the bytes as the format lays them out, written by hand. */
const SMALL = hex(`f0 01 01  08  00 ${PENDING_TAG} 09 08 ${Buffer.from('http://x').toString('hex')}`);

/** Every edge of a tree as "message → operation" lines: two trees with the same lines are the same. */
function edges(t: OtsTimestamp): string[] {
  const lines: string[] = [];
  const visit = (node: OtsTimestamp) => {
    for (const { op, next } of node.ops) {
      lines.push(`${node.msg.toString('hex')} ${op.op} ${'arg' in op ? op.arg.toString('hex') : ''}`);
      visit(next);
    }
  };
  visit(t);
  return [...new Set(lines)].sort();
}

const rejects = (action: () => unknown, what: string) =>
  assert.throws(action, (error) => error instanceof OtsFormatError, what);

test('a timestamp written by hand reads as the tree it describes, and writes back to the same bytes', () => {
  const t = readTimestamp(SMALL, ZERO);
  assert.equal(t.ops.length, 1);
  assert.deepEqual(t.ops[0]!.op, { op: 'append', arg: hex('01') });
  const hashed = t.ops[0]!.next.ops[0]!;
  assert.equal(hashed.op.op, 'sha256');
  assert.deepEqual(hashed.next.attestations, [{ kind: 'pending', uri: 'http://x' }]);
  assert.deepEqual(hashed.next.msg, hash('sha256', Buffer.concat([ZERO, hex('01')]), 'buffer'));
  assert.deepEqual(writeTimestamp(t), SMALL);
});

test('written timestamps read back as the same tree: same bytes again, same edges, same attestations', () => {
  fc.assert(
    fc.property(timestampArb(), (t) => {
      const bytes = writeTimestamp(t);
      const back = readTimestamp(bytes, t.msg);
      assert.deepEqual(writeTimestamp(back), bytes);
      assert.deepEqual(edges(back), edges(t));
      assert.deepEqual(new Set(describedAttestations(back)), new Set(describedAttestations(t)));
    }),
  );
});

test('detached files round trip, starting with the magic, version 1 and SHA-256', () => {
  fc.assert(
    fc.property(timestampArb(4, digestArb), (t) => {
      const file = writeDetachedFile(t.msg, t);
      assert.equal(file.subarray(0, 33).toString('hex'), `${MAGIC}0108`);
      const { digest, timestamp } = readDetachedFile(file);
      assert.deepEqual(digest, t.msg);
      assert.deepEqual(writeDetachedFile(digest, timestamp), file);
    }),
  );
  rejects(() => writeDetachedFile(Buffer.alloc(32, 1), readTimestamp(SMALL, ZERO)), 'digest not the message');
});

interface Malformed {
  what: string;
  bytes: Buffer;
  /** The message a timestamp starts at (32 zero bytes if not given). */
  msg?: Buffer;
  /** A whole .ots file. */
  detached?: boolean;
  /** Refused here by choice though the reference reads it (docs/decisions.md, "OpenTimestamps written by a small module of our own"). */
  oursOnly?: boolean;
}

/** Inputs the format does not allow. */
function malformed(): Malformed[] {
  const file = writeDetachedFile(ZERO, readTimestamp(SMALL, ZERO));
  const chain = (n: number) => Buffer.concat([Buffer.alloc(n, 0x08), hex(`00 0588960d73d71901 01 01`)]);
  const files = (cases: Malformed[]) => cases.map((c) => ({ ...c, detached: true }));
  return [
    ...Array.from({ length: SMALL.length }, (_, n) => ({
      what: `cut to ${n} bytes`,
      bytes: SMALL.subarray(0, n),
    })),
    ...files(
      Array.from({ length: file.length }, (_, n) => ({
        what: `file cut to ${n}`,
        bytes: file.subarray(0, n),
      })),
    ),
    { what: 'a trailing byte', bytes: Buffer.concat([SMALL, hex('00')]) },
    ...files([
      { what: 'a file with a trailing byte', bytes: Buffer.concat([file, hex('08')]) },
      { what: 'a bad magic', bytes: Buffer.concat([hex('01'), file.subarray(1)]) },
      { what: 'major version 2', bytes: Buffer.concat([file.subarray(0, 31), hex('02'), file.subarray(32)]) },
      {
        what: 'a SHA-1 file digest',
        bytes: Buffer.concat([file.subarray(0, 32), hex('02'), ZERO.subarray(0, 20), SMALL]),
        oursOnly: true,
      },
    ]),
    { what: 'an unknown operation tag', bytes: hex(`04 00 ${PENDING_TAG} 01 00`) },
    { what: 'an append of 4097 bytes', bytes: Buffer.concat([hex('f0 8120'), Buffer.alloc(4097), SMALL]) },
    { what: 'an append of no bytes', bytes: Buffer.concat([hex('f0 00'), SMALL]) },
    {
      what: 'a result over 4096 bytes',
      bytes: Buffer.concat([hex('f0 e11f'), Buffer.alloc(4065, 7), SMALL]),
    },
    { what: 'hexlify of 2049 bytes', bytes: Buffer.concat([hex('f3'), SMALL]), msg: Buffer.alloc(2049, 1) },
    { what: 'hexlify of nothing', bytes: Buffer.concat([hex('f3'), SMALL]), msg: Buffer.alloc(0) },
    { what: 'reverse of nothing', bytes: Buffer.concat([hex('f2'), SMALL]), msg: Buffer.alloc(0) },
    { what: '256 operations deep', bytes: chain(256) },
    { what: 'a pending URI with "?"', bytes: hex(`00 ${PENDING_TAG} 04 03 61 3f 62`) },
    {
      what: 'a pending URI of 1001 bytes',
      bytes: Buffer.concat([hex(`00 ${PENDING_TAG} eb07 e907`), Buffer.alloc(1001, 0x61)]),
    },
    { what: 'a pending payload with a byte more', bytes: hex(`00 ${PENDING_TAG} 03 01 61 00`) },
    { what: 'a Bitcoin payload with a byte more', bytes: hex(`00 0588960d73d71901 02 01 00`) },
    { what: 'a Litecoin payload that is no height', bytes: hex(`00 06869a0d73d71b45 01 80`) },
    {
      what: 'an attestation payload of 8193 bytes',
      bytes: Buffer.concat([hex('00 0102030405060708 8140'), Buffer.alloc(8193)]),
    },
    { what: 'a separator then the end', bytes: hex('ff') },
    { what: 'nothing', bytes: Buffer.alloc(0) },
  ];
}

const read = ({ bytes, msg, detached }: Malformed) =>
  detached ? readDetachedFile(bytes) : readTimestamp(bytes, msg ?? ZERO);

test('malformed timestamps and files fail with OtsFormatError, and the reference rejects them too', async () => {
  const cases = malformed();
  for (const c of cases) rejects(() => read(c), c.what);
  const answers = await reference(
    'reserialize',
    cases.map(({ bytes, msg, detached }) => ({
      bytes: bytes.toString('hex'),
      msg: (msg ?? ZERO).toString('hex'),
      detached,
    })),
  );
  cases.forEach(({ what, oursOnly }, i) => assert.equal('error' in answers[i], !oursOnly, what));
});

test('at the limits both accept: 255 operations deep, a result of 4096 bytes, a message of 4096', async () => {
  const attested = hex(`00 0588960d73d71901 01 01`);
  const cases = [
    { bytes: Buffer.concat([Buffer.alloc(255, 0x08), attested]), msg: ZERO },
    { bytes: Buffer.concat([hex('f0 e01f'), Buffer.alloc(4064, 7), attested]), msg: ZERO },
    { bytes: Buffer.concat([hex('f3'), attested]), msg: Buffer.alloc(2048, 1) },
    { bytes: attested, msg: Buffer.alloc(4096, 1) },
  ];
  const answers = await reference(
    'reserialize',
    cases.map(({ bytes, msg }) => ({ bytes: bytes.toString('hex'), msg: msg.toString('hex') })),
  );
  cases.forEach(({ bytes, msg }, i) => {
    assert.deepEqual(writeTimestamp(readTimestamp(bytes, msg)), bytes);
    assert.equal(answers[i].bytes, bytes.toString('hex'));
  });
  rejects(() => readTimestamp(attested, Buffer.alloc(4097)), 'a message of 4097 bytes');
});

test('random and mutated bytes give a timestamp or an OtsFormatError, never another error', () => {
  const valid = fc.sample(timestampArb(3), 20).map((t) => ({ msg: t.msg, bytes: writeTimestamp(t) }));
  fc.assert(
    fc.property(
      fc.constantFrom(...valid),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }),
      ({ msg, bytes }, flips) => {
        const mutated = Buffer.from(bytes);
        for (const [at, bits] of flips) mutated[at % mutated.length]! ^= bits;
        try {
          readTimestamp(mutated, msg);
        } catch (error) {
          assert.ok(error instanceof OtsFormatError, String(error));
        }
      },
    ),
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (random) => {
      try {
        readDetachedFile(Buffer.concat([hex(MAGIC), hex('0108'), ZERO, Buffer.from(random)]));
      } catch (error) {
        assert.ok(error instanceof OtsFormatError, String(error));
      }
    }),
  );
});

test('the reference reads what this module writes and writes it again byte for byte', async () => {
  const stamps = fc.sample(timestampArb(), 150);
  const files = fc.sample(timestampArb(4, digestArb), 30);
  const items = [
    ...stamps.map((t) => ({ msg: t.msg.toString('hex'), bytes: writeTimestamp(t).toString('hex') })),
    ...files.map((t) => ({ detached: true, bytes: writeDetachedFile(t.msg, t).toString('hex') })),
  ];
  const answers = await reference('reserialize', items);
  [...stamps, ...files].forEach((t, i) => {
    assert.equal(answers[i].error, undefined);
    assert.equal(answers[i].bytes, items[i]!.bytes);
    const bytes = Buffer.from(items[i]!.bytes, 'hex');
    const ours = i < stamps.length ? readTimestamp(bytes, t.msg) : readDetachedFile(bytes).timestamp;
    assert.deepEqual(sortedDescriptions(answers[i].attestations), describedAttestations(ours));
  });
});

test('timestamps the reference writes (every operation and attestation kind) read identically', async () => {
  const samples = await reference('write', {});
  assert.deepEqual(
    samples.map((s: { name: string }) => s.name),
    ['every-kind', 'long-chain', 'detached'],
  );
  for (const { name, msg, bytes, attestations } of samples) {
    const input = Buffer.from(bytes, 'hex');
    const t =
      name === 'detached' ? readDetachedFile(input).timestamp : readTimestamp(input, Buffer.from(msg, 'hex'));
    const again = name === 'detached' ? writeDetachedFile(t.msg, t) : writeTimestamp(t);
    assert.equal(again.toString('hex'), bytes, name);
    assert.deepEqual(describedAttestations(t), sortedDescriptions(attestations), name);
  }
  const kinds = readTimestamp(Buffer.from(samples[0].bytes, 'hex'), Buffer.from(samples[0].msg, 'hex'));
  assert.deepEqual(kinds.ops.map(({ op }) => op.op).sort(), [
    'append',
    'hexlify',
    'keccak256',
    'prepend',
    'reverse',
    'ripemd160',
    'sha1',
    'sha256',
  ]);
});

test('repeats are read once: an attestation twice is one, an operation twice is one with both trees', () => {
  const bitcoin = (height: string) => `00 0588960d73d71901 01 ${height}`;
  const t = readTimestamp(
    hex(`ff ${bitcoin('07')} ff f0 01 01 ${bitcoin('02')}  ff ${bitcoin('07')}  f0 01 01 ${bitcoin('01')}`),
    ZERO,
  );
  assert.deepEqual(t.attestations, [{ kind: 'bitcoin', height: 7 }]);
  assert.equal(t.ops.length, 1);
  assert.deepEqual(t.ops[0]!.next.attestations, [
    { kind: 'bitcoin', height: 1 },
    { kind: 'bitcoin', height: 2 },
  ]);
  assert.deepEqual(
    writeTimestamp(t),
    hex(`ff ${bitcoin('07')} f0 01 01 ff ${bitcoin('01')} ${bitcoin('02')}`),
  );
});
