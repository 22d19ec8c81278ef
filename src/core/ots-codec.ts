import { applyOp, compareOps, fail, MAX_MSG, OP_TAGS, opOfTag, type OtsOp } from './ots-ops.ts';

/**
 * The OpenTimestamps serialization: a timestamp is a tree whose nodes are messages and whose edges are
 * operations, with attestations on the nodes. Read from the reference implementation
 * (github.com/opentimestamps/python-opentimestamps, opentimestamps/core: timestamp.py, notary.py,
 * serialize.py) and held to it by tests that run it; the choices are in docs/decisions.md, "OpenTimestamps written by a small module of our own".
 */

export type OtsAttestation =
  | { kind: 'pending'; uri: string }
  | { kind: 'bitcoin'; height: number }
  | { kind: 'unknown'; tag: Buffer; payload: Buffer };
export interface OtsTimestamp {
  msg: Buffer;
  attestations: OtsAttestation[];
  ops: Array<{ op: OtsOp; next: OtsTimestamp }>;
}

/** Nesting limit: a path from the first message has at most 255 operations (timestamp.py). */
const MAX_DEPTH = 256;
const MAX_PAYLOAD = 8192;
const MAX_URI = 1000;
const URI = /^[A-Za-z0-9._/:-]*$/;
const MAJOR_VERSION = 1;
const MAGIC = Buffer.from('004f70656e54696d657374616d7073000050726f6f6600bf89e2e884e89294', 'hex');

const PENDING = Buffer.from('83dfe30d2ef90c8e', 'hex');
const BITCOIN = Buffer.from('0588960d73d71901', 'hex');
/** Litecoin's and Ethereum's block-header attestations: known to the reference, `unknown` here. */
const HEIGHT_ONLY = [Buffer.from('06869a0d73d71b45', 'hex'), Buffer.from('30fe8087b5c7ead7', 'hex')];

/* The order the reference writes attestations in: by tag, then pending by URI, Bitcoin (and Litecoin,
 * Ethereum) by height, others by payload. */

const varuintValue = (payload: Buffer): number => {
  const reader = new Reader(payload);
  const value = reader.varuint();
  reader.end('an attestation payload');
  return value;
};

function attestationTag(a: OtsAttestation): Buffer {
  return a.kind === 'pending' ? PENDING : a.kind === 'bitcoin' ? BITCOIN : a.tag;
}

function compareAttestations(a: OtsAttestation, b: OtsAttestation): number {
  const byTag = Buffer.compare(attestationTag(a), attestationTag(b));
  if (byTag !== 0) return byTag;
  if (a.kind !== b.kind) return a.kind < b.kind ? -1 : 1; // an `unknown` with a known tag, refused when written
  if (a.kind === 'pending' && b.kind === 'pending') return a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0;
  if (a.kind === 'bitcoin' && b.kind === 'bitcoin') return a.height - b.height;
  if (a.kind !== 'unknown' || b.kind !== 'unknown') return 0;
  if (HEIGHT_ONLY.some((tag) => tag.equals(a.tag))) return varuintValue(a.payload) - varuintValue(b.payload);
  return Buffer.compare(a.payload, b.payload);
}

const addAttestation = (list: OtsAttestation[], attestation: OtsAttestation): void => {
  if (!list.some((a) => compareAttestations(a, attestation) === 0)) list.push(attestation);
};

/** Merges `source` into `target` (same message): attestations once each, equal operations merged. */
export function mergeInto(target: OtsTimestamp, source: OtsTimestamp): void {
  for (const attestation of source.attestations) addAttestation(target.attestations, attestation);
  for (const edge of source.ops) {
    const same = target.ops.find((e) => compareOps(e.op, edge.op) === 0);
    if (same === undefined) target.ops.push({ op: edge.op, next: copy(edge.next) });
    else mergeInto(same.next, edge.next);
  }
}

/** A copy of the tree (its nodes and lists; the buffers are shared). */
export function copy(t: OtsTimestamp): OtsTimestamp {
  return {
    msg: t.msg,
    attestations: [...t.attestations],
    ops: t.ops.map(({ op, next }) => ({ op, next: copy(next) })),
  };
}

/**
 * One node as the format holds it: each attestation once, equal operations as one (their trees merged,
 * into copies), both in canonical order. The trees below are shared with `node`, not copied.
 */
function canonicalNode(node: OtsTimestamp): OtsTimestamp {
  const attestations = [...node.attestations].sort(compareAttestations);
  const ops = node.ops.map((edge) => ({ ...edge })).sort((a, b) => compareOps(a.op, b.op));
  const level: OtsTimestamp = { msg: node.msg, attestations: [], ops: [] };
  for (const attestation of attestations) {
    const last = level.attestations.at(-1);
    if (last === undefined || compareAttestations(last, attestation) !== 0)
      level.attestations.push(attestation);
  }
  const copied = new Set<OtsTimestamp>();
  for (const edge of ops) {
    const last = level.ops.at(-1);
    if (last === undefined || compareOps(last.op, edge.op) !== 0) {
      level.ops.push(edge);
      continue;
    }
    if (!copied.has(last.next)) {
      last.next = copy(last.next);
      copied.add(last.next);
    }
    mergeInto(last.next, edge.next);
  }
  for (const merged of copied) sortTree(merged);
  return level;
}

function sortTree(t: OtsTimestamp): void {
  t.attestations.sort(compareAttestations);
  t.ops.sort((a, b) => compareOps(a.op, b.op));
  for (const { next } of t.ops) sortTree(next);
}

/** The operations that hash their message: what reading a hostile timestamp spends its time on. */
const HASHES = new Set<OtsOp['op']>(['sha256', 'sha1', 'ripemd160', 'keccak256']);

class Reader {
  at = 0;
  /** How many more message bytes the hash operations read may hash. */
  hashBudget = Infinity;
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
  take(n: number): Buffer {
    if (this.at + n > this.bytes.length) fail('truncated');
    this.at += n;
    return Buffer.from(this.bytes.subarray(this.at - n, this.at));
  }
  byte(): number {
    if (this.at >= this.bytes.length) fail('truncated');
    return this.bytes[this.at++]!;
  }
  /** Unsigned LEB128, at most 2^53 − 1. */
  varuint(): number {
    let value = 0;
    for (let scale = 1; ; scale *= 128) {
      const b = this.byte();
      value += (b & 0x7f) * scale;
      if (value > Number.MAX_SAFE_INTEGER) fail('a number is too large');
      if ((b & 0x80) === 0) return value;
      if (scale > 2 ** 56) fail('a number is too long');
    }
  }
  varbytes(max: number, min = 0): Buffer {
    const length = this.varuint();
    if (length > max || length < min) fail(`a length of ${length} is outside ${min}..${max}`);
    return this.take(length);
  }
  end(what: string): void {
    if (this.at !== this.bytes.length) fail(`trailing bytes after ${what}`);
  }
}

function readAttestation(reader: Reader): OtsAttestation {
  const tag = reader.take(8);
  const payload = reader.varbytes(MAX_PAYLOAD);
  if (tag.equals(PENDING)) {
    const inner = new Reader(payload);
    const uri = inner.varbytes(MAX_URI).toString('latin1');
    inner.end('a pending attestation');
    if (!URI.test(uri)) fail('a pending attestation has a character its URI may not have');
    return { kind: 'pending', uri };
  }
  if (tag.equals(BITCOIN)) return { kind: 'bitcoin', height: varuintValue(payload) };
  if (HEIGHT_ONLY.some((known) => known.equals(tag))) varuintValue(payload);
  return { kind: 'unknown', tag, payload };
}

function readNode(reader: Reader, msg: Buffer, depthLeft: number): OtsTimestamp {
  if (depthLeft === 0) fail('nested too deep');
  const node: OtsTimestamp = { msg, attestations: [], ops: [] };
  const item = (tag: number) => {
    if (tag === 0x00) {
      node.attestations.push(readAttestation(reader));
    } else {
      const op = opOfTag(tag, () => reader.varbytes(MAX_MSG, 1));
      if (HASHES.has(op.op)) {
        reader.hashBudget -= msg.length;
        if (reader.hashBudget < 0) fail('its operations hash more bytes than allowed');
      }
      node.ops.push({ op, next: readNode(reader, applyOp(op, msg), depthLeft - 1) });
    }
  };
  let tag = reader.byte();
  for (; tag === 0xff; tag = reader.byte()) item(reader.byte());
  item(tag);
  return canonicalNode(node);
}

/**
 * Reads a serialized timestamp of `msg`. `maxHashedBytes` bounds the bytes its hash operations may
 * hash in all (what a timestamp built for hashing cost spends a reader's time on); none by default.
 */
export function readTimestamp(
  bytes: Buffer,
  msg: Buffer,
  { maxHashedBytes = Infinity }: { maxHashedBytes?: number } = {},
): OtsTimestamp {
  if (msg.length > MAX_MSG) fail(`a message longer than ${MAX_MSG} bytes`);
  const reader = new Reader(bytes);
  reader.hashBudget = maxHashedBytes;
  const timestamp = readNode(reader, Buffer.from(msg), MAX_DEPTH);
  reader.end('the timestamp');
  return timestamp;
}

const varuint = (value: number): Buffer => {
  const out: number[] = [];
  do {
    const low = value % 128;
    value = Math.floor(value / 128);
    out.push(value > 0 ? low | 0x80 : low);
  } while (value > 0);
  return Buffer.from(out);
};
const varbytes = (bytes: Buffer): Buffer => Buffer.concat([varuint(bytes.length), bytes]);

function writeAttestation(a: OtsAttestation): Buffer {
  let payload: Buffer;
  if (a.kind === 'pending') {
    if (a.uri.length > MAX_URI || !URI.test(a.uri))
      fail('a pending attestation URI the format does not allow');
    payload = varbytes(Buffer.from(a.uri, 'latin1'));
  } else if (a.kind === 'bitcoin') {
    if (!Number.isSafeInteger(a.height) || a.height < 0) fail('a Bitcoin height is not a whole number');
    payload = varuint(a.height);
  } else {
    if (a.tag.length !== 8 || a.tag.equals(PENDING) || a.tag.equals(BITCOIN))
      fail('an unusable attestation tag');
    if (a.payload.length > MAX_PAYLOAD) fail('an attestation payload is too long');
    if (HEIGHT_ONLY.some((known) => known.equals(a.tag))) varuintValue(a.payload);
    payload = a.payload;
  }
  return Buffer.concat([Buffer.from([0x00]), attestationTag(a), varbytes(payload)]);
}

function writeNode(node: OtsTimestamp, depthLeft: number, out: Buffer[]): void {
  if (depthLeft === 0) fail('nested too deep');
  const merged = canonicalNode(node);
  if (merged.attestations.length + merged.ops.length === 0) fail('a message with nothing after it');
  const items = merged.attestations.length + merged.ops.length;
  let written = 0;
  const separate = () => {
    if (++written < items) out.push(Buffer.from([0xff]));
  };
  for (const attestation of merged.attestations) {
    separate();
    out.push(writeAttestation(attestation));
  }
  for (const { op, next } of merged.ops) {
    separate();
    if (!applyOp(op, node.msg).equals(next.msg)) fail(`the message after ${op.op} is not its result`);
    out.push(Buffer.from([OP_TAGS[op.op]]));
    if ('arg' in op) out.push(varbytes(op.arg));
    writeNode(next, depthLeft - 1, out);
  }
}

export function writeTimestamp(t: OtsTimestamp): Buffer {
  if (t.msg.length > MAX_MSG) fail(`a message longer than ${MAX_MSG} bytes`);
  const out: Buffer[] = [];
  writeNode(t, MAX_DEPTH, out);
  return Buffer.concat(out);
}

/** The `.ots` file: magic, major version 1, the file hash operation (SHA-256 only), the digest, the tree. */
export function writeDetachedFile(fileDigest: Buffer, t: OtsTimestamp): Buffer {
  if (fileDigest.length !== 32 || !fileDigest.equals(t.msg))
    fail("the timestamp's message is not the 32-byte file digest");
  const header = Buffer.concat([MAGIC, varuint(MAJOR_VERSION), Buffer.from([OP_TAGS.sha256]), fileDigest]);
  return Buffer.concat([header, writeTimestamp(t)]);
}

/**
 * The `.ots` file of a timestamp that runs from `fileDigest` through `ops`, one after another, into
 * `tail`: the serialized timestamp (writeTimestamp) of the last message, written earlier. Only the
 * chain's own operations are written here, so the tail's are not computed again; the caller vouches
 * that `tail` is a timestamp of the chain's last message.
 */
export function writeDetachedChain(fileDigest: Buffer, ops: OtsOp[], tail: Buffer): Buffer {
  if (fileDigest.length !== 32) fail('the file digest is not 32 bytes');
  const out = [MAGIC, varuint(MAJOR_VERSION), Buffer.from([OP_TAGS.sha256]), fileDigest];
  for (const op of ops) {
    out.push(Buffer.from([OP_TAGS[op.op]]));
    if ('arg' in op) out.push(varbytes(op.arg));
  }
  out.push(tail);
  return Buffer.concat(out);
}

export function readDetachedFile(bytes: Buffer): { digest: Buffer; timestamp: OtsTimestamp } {
  const reader = new Reader(bytes);
  if (!reader.take(Math.min(MAGIC.length, bytes.length)).equals(MAGIC)) fail('not an OpenTimestamps proof');
  if (reader.varuint() !== MAJOR_VERSION) fail('an unsupported major version');
  if (reader.byte() !== OP_TAGS.sha256) fail('the file digest is not SHA-256');
  const digest = reader.take(32);
  const timestamp = readNode(reader, digest, MAX_DEPTH);
  reader.end('the timestamp');
  return { digest, timestamp };
}
