import { createHash, randomBytes } from 'node:crypto';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier } from '@peculiar/asn1-x509';
import { MessageImprint, PKIStatus, TimeStampReq, TimeStampResp } from '@peculiar/asn1-tsp';
import { attestationsOf, readTimestamp, type OtsTimestamp } from '../core/opentimestamps.ts';
import { checkExternalToken } from '../verify/external-token.ts';

/**
 * The two kinds of outside voucher for a checkpoint, over HTTP: an RFC 3161 time-stamping authority
 * (RFC 3161 §3.4) and an OpenTimestamps calendar (`POST /digest`, `GET /timestamp/{commitment}`).
 * Every answer is checked before it is returned; anything else is an `AnchorFailure` with a reason fit
 * for the log and /api/status.
 */

/** How long one request to an authority or a calendar may take. */
const REQUEST_TIMEOUT_MS = 10_000;
/** The largest answer read from either; tokens and timestamps are a few kilobytes. */
const MAX_ANSWER_BYTES = 256 * 1024;
/**
 * The largest calendar answer read, as the reference client caps it: reading a hostile timestamp costs
 * up to about 11 ms per KiB (Keccak branches), so 10,000 bytes keep one answer to about 0.1 s.
 */
const MAX_CALENDAR_BYTES = 10_000;
const SHA256_OID = '2.16.840.1.101.3.4.2.1';

export class AnchorFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AnchorFailure';
  }
}

async function call(url: string, init: RequestInit, what: string): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, {
      ...init,
      redirect: 'error',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS} ms` : 'unreachable';
    throw new AnchorFailure(`${what}: ${reason}`);
  }
  return response;
}

async function body(response: Response, what: string, limit = MAX_ANSWER_BYTES): Promise<Buffer> {
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > limit) {
    await response.body?.cancel();
    throw new AnchorFailure(`${what}: answer of ${length} bytes is over ${limit}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += (chunk as Uint8Array).length;
    if (size > limit) throw new AnchorFailure(`${what}: answer over ${limit} bytes`);
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks);
}

export interface AnchorToken {
  genTime: Date;
  /** The DER TimeStampToken (the reply's token, as the authority signed it). */
  token: Buffer;
}

/**
 * Asks an RFC 3161 authority for a token over the SHA-256 of `data` (a checkpoint's signed note), with
 * a nonce and the authority's certificate requested; checks status, imprint, nonce and signature.
 */
export async function requestToken(url: string, data: Buffer): Promise<AnchorToken> {
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
  const what = `time-stamping authority ${url}`;
  const response = await call(
    url,
    {
      method: 'POST',
      headers: { 'content-type': 'application/timestamp-query', accept: 'application/timestamp-reply' },
      body: Buffer.from(AsnConvert.serialize(request)),
    },
    what,
  );
  if (!response.ok) throw new AnchorFailure(`${what}: HTTP ${response.status}`);
  const reply = await body(response, what);
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
  return { genTime: check.genTime, token };
}

/** Submits a digest (a checkpoint's root hash) to a calendar: its serialized timestamp of the digest. */
export async function submitDigest(calendar: string, digest: Buffer): Promise<Buffer> {
  const what = `OpenTimestamps calendar ${calendar}`;
  const response = await call(
    `${calendar}/digest`,
    {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/vnd.opentimestamps.v1',
      },
      body: digest,
    },
    what,
  );
  if (!response.ok) throw new AnchorFailure(`${what}: HTTP ${response.status}`);
  const reply = await body(response, what, MAX_CALENDAR_BYTES);
  const timestamp = parseReply(reply, digest, what);
  if (attestationsOf(timestamp).length === 0)
    throw new AnchorFailure(`${what}: the answer holds no attestation`);
  return reply;
}

/**
 * Asks a calendar for the upgrade of a pending commitment: its serialized timestamp from the
 * commitment on, or undefined while Bitcoin has not confirmed it (404).
 */
export async function fetchUpgrade(calendar: string, commitment: Buffer): Promise<Buffer | undefined> {
  const what = `OpenTimestamps calendar ${calendar}`;
  const response = await call(
    `${calendar}/timestamp/${commitment.toString('hex')}`,
    { headers: { accept: 'application/vnd.opentimestamps.v1' } },
    what,
  );
  if (response.status === 404) {
    await response.body?.cancel();
    return undefined;
  }
  if (!response.ok) throw new AnchorFailure(`${what}: HTTP ${response.status}`);
  const reply = await body(response, what, MAX_CALENDAR_BYTES);
  parseReply(reply, commitment, what);
  return reply;
}

export function parseReply(reply: Buffer, msg: Buffer, what: string): OtsTimestamp {
  try {
    return readTimestamp(reply, msg);
  } catch {
    throw new AnchorFailure(`${what}: the answer is not an OpenTimestamps timestamp`);
  }
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
