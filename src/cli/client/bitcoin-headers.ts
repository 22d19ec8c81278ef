import { bitcoinBlockHash } from '../../verify/bitcoin-header.ts';
import { HashproofError, type ProofAnchors } from '../../client/client.ts';

/**
 * The Bitcoin block headers `hashproof verify --bitcoin-headers URL` checks a calendar's claim with,
 * from an Esplora-compatible API (`GET /block-height/N`: the block's hash as text; `GET
 * /block/HASH/header`: its 80-byte header as hex). A header counts only when it hashes to the hash the
 * API named for that height; what the header must then hold is checked offline, with the proof.
 */

/** A block hash is 64 hex digits, a header 160: anything longer is not an answer of this API. */
const MAX_ANSWER_BYTES = 1024;

/** The heights of the Bitcoin blocks a proof's anchors claim. */
export function claimedHeights(anchors: ProofAnchors | undefined): number[] {
  const heights = (anchors?.opentimestamps ?? []).flatMap((o) =>
    typeof o.bitcoinHeight === 'number' && Number.isSafeInteger(o.bitcoinHeight) ? [o.bitcoinHeight] : [],
  );
  return [...new Set(heights)].slice(0, 16);
}

/** The headers of these heights; a server that does not answer, or answers wrongly, is exit 3. */
export async function fetchBitcoinHeaders(
  base: string,
  heights: readonly number[],
  timeoutMs: number,
): Promise<Map<number, Buffer>> {
  const api = base.replace(/\/+$/, '');
  const headers = new Map<number, Buffer>();
  for (const height of heights) {
    const hash = (await text(`${api}/block-height/${height}`, timeoutMs)).trim();
    if (!/^[0-9a-f]{64}$/.test(hash)) throw unchecked(`${api} named no block hash for height ${height}`);
    const hex = (await text(`${api}/block/${hash}/header`, timeoutMs)).trim();
    const header = /^[0-9a-f]{160}$/.test(hex) ? Buffer.from(hex, 'hex') : undefined;
    if (header === undefined || bitcoinBlockHash(header) !== hash)
      throw unchecked(`${api} served a header for block ${height} that does not hash to ${hash}`);
    headers.set(height, header);
  }
  return headers;
}

const unchecked = (message: string) =>
  new HashproofError(0, 'network_error', `could not check the Bitcoin header: ${message}`);

async function text(url: string, timeoutMs: number): Promise<string> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw unchecked(
      `${url}: ${(error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'unreachable'}`,
    );
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw unchecked(`${url} answered ${response.status}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += (chunk as Uint8Array).length;
      if (size > MAX_ANSWER_BYTES) throw new Error('too large');
      chunks.push(Buffer.from(chunk as Uint8Array));
    }
  } catch (error) {
    await response.body?.cancel().catch(() => undefined);
    throw unchecked(
      `${url}: ${(error as Error).message === 'too large' ? `answer over ${MAX_ANSWER_BYTES} bytes` : 'the answer broke off'}`,
    );
  }
  return Buffer.concat(chunks).toString('utf8');
}
