/** The largest bodies the attack requests send: time-stamp queries and a new proof's metadata. */
import { sha256Hex } from '../../../src/core/hashing.ts';
import { TSA_QUERY_MAX_BYTES } from '../../../src/tsa/tsa.ts';

/** DER: a tag, a definite length, the contents. */
function tlv(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const n = body.length;
  const length =
    n < 0x80
      ? [n]
      : n < 0x100
        ? [0x81, n]
        : n < 0x10000
          ? [0x82, n >> 8, n & 0xff]
          : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}

const SHA256_IMPRINT = tlv(
  0x30,
  tlv(0x30, tlv(0x06, Buffer.from('608648016503040201', 'hex')), Buffer.from([0x05, 0x00])),
  tlv(0x04, Buffer.alloc(32, 0x5a)),
);

/**
 * A valid RFC 3161 TimeStampReq (version 1, a SHA-256 imprint, a nonce, certReq) with as many empty
 * extensions as fit in the largest query the service takes (TSA_QUERY_MAX_BYTES).
 */
function largeValidTsaQuery(): Buffer {
  const head = [
    tlv(0x02, Buffer.from([1])),
    SHA256_IMPRINT,
    tlv(0x02, Buffer.from('0102030405060708', 'hex')),
    tlv(0x01, Buffer.from([0xff])),
  ];
  const extension = (i: number) =>
    tlv(
      0x30,
      tlv(0x06, Buffer.from(i < 0x80 ? [0x2a, 0x03, i] : [0x2a, 0x03, 0x80 | (i >> 7), i & 0x7f])),
      tlv(0x04, Buffer.alloc(0)),
    );
  const build = (count: number) =>
    tlv(0x30, ...head, tlv(0xa0, ...Array.from({ length: count }, (_, i) => extension(i))));
  let count = 1;
  while (build(count + 1).length <= TSA_QUERY_MAX_BYTES) count++;
  return build(count);
}

/**
 * Not a TimeStampReq: a SEQUENCE of 3-byte INTEGERs up to the largest query the service takes, the
 * costliest refusal found (each element becomes a parser node before the parser gives up).
 */
function largeInvalidTsaQuery(): Buffer {
  const integer = Buffer.from([0x02, 0x01, 0x01]);
  const count = Math.floor((TSA_QUERY_MAX_BYTES - 8) / integer.length);
  return tlv(0x30, ...Array.from({ length: count }, () => integer));
}

/**
 * The most metadata a proof takes: objects nested 32 deep (the metadata object is the first) and as many
 * top-level keys as fit in 8192 bytes of JSON; every key name is published with the proof.
 */
function maximalMetadata(): Record<string, unknown> {
  let chain: unknown = 0;
  for (let level = 1; level < 32; level++) chain = { d: chain };
  const metadata: Record<string, unknown> = { d: chain };
  let size = Buffer.byteLength(JSON.stringify(metadata));
  for (let i = 0; ; i++) {
    const key = `k${i}`;
    const added = key.length + 5; // ,"k…":0
    if (size + added > 8192) break;
    metadata[key] = 0;
    size += added;
  }
  return metadata;
}

interface AttackBodies {
  tsaValid: Buffer;
  tsaInvalid: Buffer;
  metadata: Record<string, unknown>;
}

let bodies: AttackBodies | undefined;
/** The bodies, made once per thread. */
export const attackBodies = (): AttackBodies =>
  (bodies ??= {
    tsaValid: largeValidTsaQuery(),
    tsaInvalid: largeInvalidTsaQuery(),
    metadata: maximalMetadata(),
  });

/** A new proof with the largest label and idempotency key and the most metadata the service takes. */
export function maximalNotarize(n: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      contentHash: 'sha256:' + sha256Hex(`hostile-${process.pid}-${n}`),
      label: `hostile ${n} `.padEnd(120, 'label'),
      metadata: attackBodies().metadata,
      idempotencyKey: `hostile-${process.pid}-${n}-`.padEnd(160, 'k'),
    }),
  );
}
