import { createHash, randomBytes } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { MessageImprint, PKIStatus, TimeStampReq, TimeStampResp } from '@peculiar/asn1-tsp';
import { attestationsOf, readTimestamp, type OtsTimestamp } from '../core/opentimestamps.ts';
import { checkExternalToken } from '../verify/external-token.ts';
import { AnchorFailure, type Endpoint, type OutsideClient } from './outside-http.ts';

export { AnchorFailure } from './outside-http.ts';

/**
 * The two pieces of a checkpoint's anchor, asked for over HTTP: a token from an RFC 3161 time-stamping
 * authority (RFC 3161 §3.4) and a submission to an OpenTimestamps calendar (`POST /digest`,
 * `GET /timestamp/{commitment}`). Every answer is checked before it is returned; anything else is an
 * `AnchorFailure` with a reason fit for a log line and /api/status.
 */

/** The largest answer read from an authority; tokens are a few kilobytes. */
const MAX_ANSWER_BYTES = 256 * 1024;
/**
 * The largest calendar answer read, as the reference client caps it: reading a hostile timestamp costs
 * up to about 11 ms per KiB (Keccak branches), so 10,000 bytes keep one answer to about 0.1 s.
 */
const MAX_CALENDAR_BYTES = 10_000;
/**
 * A calendar's answer may make its reader hash at most this many bytes in all: an honest answer hashes a
 * few kilobytes (its path to a Bitcoin block included); one built for hashing cost (Keccak over 4 KB
 * messages, branch after branch) is refused after a few milliseconds of work.
 */
export const MAX_HASHED_BYTES = 64 * 1024;
/** A calendar's answer may leave at most this many pending attestations… */
export const MAX_PENDING = 16;
/** …and take at most this many operations along any one path. */
export const MAX_PATH_OPS = 256;
/** An outside token dated this long before the checkpoint was signed, or after it came back, is refused. */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;
/** A block header's answer: 80 bytes as hex, with room for a line end. */
const MAX_HEADER_BYTES = 200;
const SHA256_OID = '2.16.840.1.101.3.4.2.1';

/** What every request of one anchoring pass shares: the client and the pass's deadline. */
export interface Outside {
  client: OutsideClient;
  signal?: AbortSignal;
}

export interface AnchorToken {
  genTime: Date;
  /** The DER TimeStampToken (the reply's token, as the authority signed it). */
  token: Buffer;
}

/**
 * Asks an RFC 3161 authority for a token over the SHA-256 of `data` (a checkpoint's signed note), with
 * a nonce and the authority's certificate requested; checks status, imprint, nonce and signature, and
 * that its time lies between `signedAt` (when the checkpoint was signed) and when the answer came back,
 * give or take MAX_CLOCK_SKEW_MS.
 */
export async function requestToken(
  outside: Outside,
  endpoint: Endpoint,
  data: Buffer,
  window: { signedAt: number; now: () => number },
): Promise<AnchorToken> {
  const imprint = createHash('sha256').update(data).digest();
  const nonce = randomBytes(8);
  nonce[0] = nonce[0]! & 0x7f; // a positive INTEGER
  const request = new TimeStampReq({
    messageImprint: new MessageImprint({
      hashAlgorithm: new AlgorithmIdentifier({ algorithm: SHA256_OID }),
      hashedMessage: new OctetString(imprint),
    }),
    nonce: new Uint8Array(nonce).buffer,
    certReq: true,
  });
  const what = `time-stamping authority ${endpoint.name}`;
  const response = await outside.client.request(endpoint, '', {
    method: 'POST',
    headers: { 'content-type': 'application/timestamp-query', accept: 'application/timestamp-reply' },
    body: Buffer.from(AsnConvert.serialize(request)),
    limit: MAX_ANSWER_BYTES,
    signal: outside.signal,
    what,
  });
  const receivedAt = window.now();
  if (!ok(response.status)) throw new AnchorFailure(`${what}: HTTP ${response.status}`);
  const reply = response.body;
  let token: Buffer;
  try {
    const parsed = AsnConvert.parse(reply, TimeStampResp);
    const status = parsed.status.status;
    if (status !== PKIStatus.granted && status !== PKIStatus.grantedWithMods) {
      const text = parsed.status.statusString?.map(String).join(' ') ?? '';
      throw new AnchorFailure(`${what}: refused (status ${status}${text ? `: ${text.slice(0, 200)}` : ''})`);
    }
    if (parsed.timeStampToken === undefined) throw new AnchorFailure(`${what}: granted without a token`);
    token = Buffer.from(AsnConvert.serialize(parsed.timeStampToken));
  } catch (error) {
    if (error instanceof AnchorFailure) throw error;
    throw new AnchorFailure(`${what}: the answer is not a DER TimeStampResp`);
  }
  const check = checkExternalToken(token, { imprint, nonce });
  if (typeof check === 'string') throw new AnchorFailure(`${what}: ${check}`);
  const genTime = check.genTime.getTime();
  if (genTime < window.signedAt - MAX_CLOCK_SKEW_MS || genTime > receivedAt + MAX_CLOCK_SKEW_MS) {
    throw new AnchorFailure(
      `${what}: its token is dated ${check.genTime.toISOString()}, outside the time the checkpoint was ` +
        `signed (${new Date(window.signedAt).toISOString()}) to when the token came back ` +
        `(${new Date(receivedAt).toISOString()}), give or take 5 minutes; not stored`,
    );
  }
  return { genTime: check.genTime, token };
}

const ok = (status: number) => status >= 200 && status < 300;

/** Submits a digest (a checkpoint's root hash) to a calendar: its serialized timestamp of the digest. */
export async function submitDigest(outside: Outside, calendar: Endpoint, digest: Buffer): Promise<Buffer> {
  const what = `OpenTimestamps calendar ${calendar.name}`;
  const response = await outside.client.request(calendar, '/digest', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/vnd.opentimestamps.v1',
    },
    body: digest,
    limit: MAX_CALENDAR_BYTES,
    signal: outside.signal,
    what,
  });
  if (!ok(response.status)) throw new AnchorFailure(`${what}: HTTP ${response.status}`);
  const timestamp = parseReply(response.body, digest, what);
  if (attestationsOf(timestamp).length === 0)
    throw new AnchorFailure(`${what}: the answer holds no attestation`);
  return response.body;
}

/**
 * Asks a calendar for the upgrade of a pending commitment: its serialized timestamp from the
 * commitment on, or undefined while Bitcoin has not confirmed it (404).
 */
export async function fetchUpgrade(
  outside: Outside,
  calendar: Endpoint,
  commitment: Buffer,
): Promise<Buffer | undefined> {
  const what = `OpenTimestamps calendar ${calendar.name}`;
  const response = await outside.client.request(calendar, `/timestamp/${commitment.toString('hex')}`, {
    headers: { accept: 'application/vnd.opentimestamps.v1' },
    limit: MAX_CALENDAR_BYTES,
    signal: outside.signal,
    what,
  });
  if (response.status === 404) return undefined;
  if (!ok(response.status)) throw new AnchorFailure(`${what}: HTTP ${response.status}`);
  parseReply(response.body, commitment, what);
  return response.body;
}

/**
 * The 80-byte header of the Bitcoin block at `height` from an Esplora-compatible API
 * (`GET /block-height/N`: the block hash, hex; `GET /block/HASH/header`: the header, hex), with the
 * hash the server named for it (checked against the header by checkBitcoinHeader).
 */
export async function fetchBitcoinHeader(
  outside: Outside,
  server: Endpoint,
  height: number,
): Promise<{ hash: string; header: Buffer }> {
  const what = `Bitcoin header server ${server.name}`;
  const text = async (suffix: string) => {
    const response = await outside.client.request(server, suffix, {
      headers: { accept: 'text/plain' },
      limit: MAX_HEADER_BYTES,
      signal: outside.signal,
      what,
    });
    if (!ok(response.status)) throw new AnchorFailure(`${what}: HTTP ${response.status} for ${suffix}`);
    return response.body.toString('latin1').trim();
  };
  const hash = await text(`/block-height/${height}`);
  if (!/^[0-9a-f]{64}$/i.test(hash)) throw new AnchorFailure(`${what}: block ${height} has no hash`);
  const header = await text(`/block/${hash.toLowerCase()}/header`);
  if (!/^[0-9a-f]{160}$/i.test(header))
    throw new AnchorFailure(`${what}: the header of block ${height} is not 80 bytes of hex`);
  return { hash: hash.toLowerCase(), header: Buffer.from(header, 'hex') };
}

/**
 * Reads a calendar's answer as a timestamp of `msg`, refused when it is none, hashes more than
 * MAX_HASHED_BYTES, leaves more than MAX_PENDING pending attestations or takes more than MAX_PATH_OPS
 * operations along a path.
 */
export function parseReply(reply: Buffer, msg: Buffer, what: string): OtsTimestamp {
  let timestamp: OtsTimestamp;
  try {
    timestamp = readTimestamp(reply, msg, { maxHashedBytes: MAX_HASHED_BYTES });
  } catch (error) {
    if (/hash more bytes/.test((error as Error).message))
      throw new AnchorFailure(`${what}: the answer hashes over ${MAX_HASHED_BYTES} bytes; refused`);
    throw new AnchorFailure(`${what}: the answer is not an OpenTimestamps timestamp`);
  }
  const pending = attestationsOf(timestamp).filter(({ attestation }) => attestation.kind === 'pending');
  if (pending.length > MAX_PENDING)
    throw new AnchorFailure(
      `${what}: the answer holds ${pending.length} pending attestations, over ${MAX_PENDING}; refused`,
    );
  const depth = longestPath(timestamp);
  if (depth > MAX_PATH_OPS)
    throw new AnchorFailure(
      `${what}: the answer has a path of ${depth} operations, over ${MAX_PATH_OPS}; refused`,
    );
  return timestamp;
}

/** The most operations along any one path of a timestamp. */
function longestPath(t: OtsTimestamp): number {
  let longest = 0;
  for (const { next } of t.ops) longest = Math.max(longest, 1 + longestPath(next));
  return longest;
}

/** Where a timestamp is left pending at calendars: each message to ask an upgrade for, with the URI. */
export function pendingCommitments(timestamp: OtsTimestamp): { commitment: Buffer; uri: string }[] {
  const found = new Map<string, { commitment: Buffer; uri: string }>();
  for (const { msg, attestation } of attestationsOf(timestamp)) {
    if (attestation.kind === 'pending')
      found.set(msg.toString('hex'), { commitment: msg, uri: attestation.uri });
  }
  return [...found.values()];
}
