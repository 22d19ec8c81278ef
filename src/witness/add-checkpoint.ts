import { createHash, verify } from 'node:crypto';
import { cosign, decodeBase64Strict, splitNote, type CosignerKey } from '../core/cosignature.ts';
import { verifyConsistency } from '../core/merkle.ts';
import { parseCheckpoint, type NoteVerifier } from '../core/signed-note.ts';
import type { CosignedCheckpoint } from './witness-state.ts';

/**
 * C2SP tlog-witness `add-checkpoint` (https://c2sp.org/tlog-witness): the request's reading and the
 * checks, in the spec's order, each failure with its status. The server (witness-server.ts) runs
 * `checkSubmission` outside any lock and `cosignSubmission` under the origin's lock, then stores the
 * result before it answers.
 */

/** The spec's limit on consistency proof lines. */
export const MAX_PROOF_LINES = 63;
/** signed-note: verifiers accept at least 16 signatures; more than this many lines is refused. */
export const MAX_SIGNATURE_LINES = 64;

const EMPTY_TREE_ROOT = createHash('sha256').digest();

export interface Answer {
  status: number;
  contentType: string;
  body: string;
}

export const refusal = (status: number, reason: string): Answer => ({
  status,
  contentType: 'text/plain; charset=utf-8',
  body: `${reason}\n`,
});

export interface Submission {
  oldSize: number;
  proof: Buffer[];
  origin: string;
  size: number;
  rootHash: Buffer;
  /** The checkpoint's note text (with its final newline). */
  text: string;
  /** The signature lines of the log's trusted keys that verified. */
  logLines: string[];
}

const SIZE = /^(0|[1-9]\d{0,15})$/;

/** Reads the request body: `old <size>`, proof lines, a blank line, the checkpoint note. */
function parseBody(body: Buffer): Omit<Submission, 'logLines'> & { lines: string[] } {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  const first = text.indexOf('\n');
  const oldMatch = /^old (\S+)$/.exec(text.slice(0, Math.max(first, 0)));
  const oldSize = Number(oldMatch?.[1]);
  if (first < 0 || !SIZE.test(oldMatch?.[1] ?? '') || !Number.isSafeInteger(oldSize))
    throw new Error('the first line is not "old <size>"');
  const proof: Buffer[] = [];
  let at = first + 1;
  for (;;) {
    const end = text.indexOf('\n', at);
    if (end < 0) throw new Error('no blank line before the checkpoint');
    const line = text.slice(at, end);
    at = end + 1;
    if (line === '') break;
    const hash = decodeBase64Strict(line);
    if (hash?.length !== 32) throw new Error('a consistency proof line is not a base64 SHA-256 hash');
    if (proof.length === MAX_PROOF_LINES)
      throw new Error(`more than ${MAX_PROOF_LINES} consistency proof lines`);
    proof.push(hash);
  }
  const note = splitNote(text.slice(at));
  if (note.lines.length > MAX_SIGNATURE_LINES)
    throw new Error(`more than ${MAX_SIGNATURE_LINES} signature lines`);
  const checkpoint = parseCheckpoint(note.text);
  const rootLine = note.text.split('\n')[2] ?? '';
  if (!Number.isSafeInteger(checkpoint.size) || decodeBase64Strict(rootLine) === undefined)
    throw new Error('malformed checkpoint');
  return {
    oldSize,
    proof,
    origin: checkpoint.origin,
    size: checkpoint.size,
    rootHash: checkpoint.rootHash,
    text: note.text,
    lines: note.lines,
  };
}

/**
 * The checks that need no state: the body's form (400), a known origin (404), a verified signature of
 * one of the origin's keys and no bad one (403), and `old` at most the checkpoint's size (400).
 */
export function checkSubmission(
  body: Buffer,
  logs: ReadonlyMap<string, readonly NoteVerifier[]>,
): Submission | Answer {
  let parsed;
  try {
    parsed = parseBody(body);
  } catch (error) {
    return refusal(400, `malformed request: ${error instanceof Error ? error.message : 'unreadable'}`);
  }
  const keys = logs.get(parsed.origin);
  if (keys === undefined) return refusal(404, 'unknown log origin');
  const logLines: string[] = [];
  const message = Buffer.from(parsed.text, 'utf8');
  for (const line of parsed.lines) {
    const [, name, encoded = ''] = line.split(' ');
    const blob = Buffer.from(encoded, 'base64');
    const key = keys.find((k) => k.name === name && blob.subarray(0, 4).equals(k.keyId));
    if (key === undefined) continue; // a signature of another key: ignored
    if (blob.length !== 68 || !verify(null, message, key.publicKey, blob.subarray(4)))
      return refusal(403, "a signature of the log's key does not verify");
    logLines.push(line);
  }
  if (logLines.length === 0) return refusal(403, "no signature of the log's key");
  if (parsed.oldSize > parsed.size) return refusal(400, 'old size is larger than the checkpoint size');
  const { lines: _lines, ...submission } = parsed;
  return { ...submission, logLines };
}

/** The 409 answer: the size of the latest checkpoint cosigned, in its own content type. */
export const conflict = (size: number): Answer => ({
  status: 409,
  contentType: 'text/x.tlog.size',
  body: `${size}\n`,
});

/**
 * The checks against the latest checkpoint cosigned (`latest`, none before the first): `old` is its
 * size (409), the empty tree's root (422), no proof from 0 (422), the proof (422), the same root at
 * the same size (422). Then the cosignature, and the record to store before answering it.
 */
export function cosignSubmission(
  submission: Submission,
  latest: CosignedCheckpoint | undefined,
  key: CosignerKey,
  now: number,
): Answer | { answer: Answer; record: CosignedCheckpoint } {
  const { oldSize, size, rootHash, proof } = submission;
  const latestSize = latest?.size ?? 0;
  if (oldSize !== latestSize) return conflict(latestSize);
  if (size === 0 && !rootHash.equals(EMPTY_TREE_ROOT))
    return refusal(422, 'a checkpoint of size 0 must have the root of the empty tree');
  if (oldSize === 0) {
    if (proof.length !== 0) return refusal(422, 'a consistency proof from size 0 must be empty');
  } else if (oldSize === size) {
    if (!rootHash.equals(latest!.rootHash) || proof.length !== 0)
      return refusal(422, 'another root hash at the size already cosigned');
  } else if (!verifyConsistency(oldSize, size, latest!.rootHash, rootHash, proof)) {
    return refusal(422, 'the consistency proof does not verify');
  }
  const line = cosign(submission.text, now, key);
  return {
    answer: { status: 200, contentType: 'text/plain; charset=utf-8', body: `${line}\n` },
    record: {
      origin: submission.origin,
      size,
      rootHash,
      note: `${submission.text}\n${[...submission.logLines, line].join('\n')}\n`,
    },
  };
}
