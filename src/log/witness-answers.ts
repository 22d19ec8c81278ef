import { isLineOf, verifyCosignature, type Cosigner } from '../core/cosignature.ts';
import { WitnessFailure, type WitnessAnswer } from './witness-http.ts';

/**
 * What the service sends a witness and how it reads the answer (C2SP tlog-witness, `add-checkpoint`).
 * Nothing a witness answers is trusted: a cosignature line is kept only when it verifies against the
 * witness's configured key over the very checkpoint sent.
 */

/** tlog-witness: a client sends at most 63 proof lines. */
const MAX_PROOF_LINES = 63;
/** A cosignature dated further ahead than this is refused (tlog-cosignature lets verifiers refuse it). */
const FUTURE_SLACK_S = 600;
/** At most this many characters of a refusal's body are shown. */
const SHOWN_BODY = 120;

/** `old <size>`, a consistency proof line per hash (base64), an empty line, then the signed checkpoint. */
export function addCheckpointBody(oldSize: number, proof: readonly Uint8Array[], note: string): string {
  if (proof.length > MAX_PROOF_LINES) throw new Error('a consistency proof of more than 63 hashes');
  const lines = proof.map((hash) => `${Buffer.from(hash).toString('base64')}\n`).join('');
  return `old ${oldSize}\n${lines}\n${note}`;
}

/** The tree size of a 409 answer (`Content-Type: text/x.tlog.size`, body `<size>\n`); throws otherwise. */
export function conflictSize(answer: WitnessAnswer): number {
  const type = answer.contentType.split(';')[0]?.trim().toLowerCase();
  const match = /^(0|[1-9]\d{0,15})\n$/.exec(answer.body.toString('latin1'));
  const size = match ? Number(match[1]) : NaN;
  if (type !== 'text/x.tlog.size' || !Number.isSafeInteger(size))
    throw new WitnessFailure('HTTP 409 without a tree size (text/x.tlog.size)');
  return size;
}

const REFUSALS: Record<number, string> = {
  400: 'the witness found the request malformed',
  403: "the witness does not trust the log's key",
  404: 'the witness does not know this log (its origin)',
  422: 'the witness refused the consistency proof',
};

/** A failure for an answer that is neither 200 nor 409: its status and the start of its body, escaped. */
export function refusal(answer: WitnessAnswer): WitnessFailure {
  const text = answer.body.subarray(0, SHOWN_BODY * 4).toString('utf8');
  const shown = JSON.stringify(text.length > SHOWN_BODY ? `${text.slice(0, SHOWN_BODY)}…` : text);
  const what = REFUSALS[answer.status] ?? 'the witness refused';
  return new WitnessFailure(`${what} (HTTP ${answer.status})${text.trim() === '' ? '' : `: ${shown}`}`);
}

/**
 * The witness's cosignature in a 200 answer: one or more signature lines, each `— ` … and a newline.
 * Lines of other keys are ignored; every line of the witness's key must verify over `text` (the
 * checkpoint's note text) and be dated at most 10 minutes ahead of `nowMs`, and one must be there.
 */
export function cosignatureOf(
  answer: WitnessAnswer,
  text: string,
  cosigner: Cosigner,
  nowMs: number,
): { line: string; timestamp: number } {
  let body: string;
  try {
    body = new TextDecoder('utf-8', { fatal: true }).decode(answer.body);
  } catch {
    throw new WitnessFailure('HTTP 200 with an answer that is not UTF-8');
  }
  const lines = body.endsWith('\n') ? body.slice(0, -1).split('\n') : [];
  if (lines.length === 0 || lines.some((line) => !line.startsWith('— ')))
    throw new WitnessFailure('HTTP 200 with an answer that is not signature lines');
  let found: { line: string; timestamp: number } | undefined;
  for (const line of lines) {
    if (!isLineOf(line, cosigner)) continue;
    let timestamp: number;
    try {
      timestamp = verifyCosignature(text, line, cosigner);
    } catch (error) {
      throw new WitnessFailure(`a cosignature by its key is refused: ${(error as Error).message}`);
    }
    if (timestamp > nowMs / 1000 + FUTURE_SLACK_S)
      throw new WitnessFailure(`a cosignature dated ${timestamp}, in the future, is refused`);
    found ??= { line, timestamp };
  }
  if (found === undefined) throw new WitnessFailure('HTTP 200 without a cosignature by its key');
  return found;
}
