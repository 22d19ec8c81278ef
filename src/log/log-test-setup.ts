/**
 * A served log of 300 proofs for the tests of the log over HTTP: a test file calls `withServedLog()`
 * in its describe block; the bindings below hold the service and the proofs' ids during its tests.
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { parseCheckpoint } from '../core/signed-note.ts';
import { api, notarizeBody, sampleHash, startServer, type TestServer } from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';

export let server: TestServer;
/** The ids of the 300 proofs, in the order they were made. */
export const ids: string[] = [];
/** The log's verifier key (C2SP signed-note), as the service publishes it. */
export let vkey: string;

/** The signed checkpoint once the log holds at least `size` entries. */
export async function integrated(size: number): Promise<string> {
  const res = await eventually(() => api(server.baseUrl, '/log/checkpoint'), {
    what: `the log reaches ${size} entries`,
    until: (checkpoint) =>
      checkpoint.status === 200 &&
      parseCheckpoint(checkpoint.text.slice(0, checkpoint.text.indexOf('\n\n') + 1)).size >= size,
    timeoutMs: 15_000,
  });
  return res.text;
}

/** Starts the service and makes the 300 proofs before the describe block's tests; stops it after. */
export function withServedLog(): void {
  before(async () => {
    server = await startServer();
    vkey = server.ctx.log.verifierKey;
    for (let i = 0; i < 300; i++) {
      const res = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({
          contentHash: sampleHash(500 + i),
          idempotencyKey: `log-${i}`,
          label: `log entry ${i}`,
        }),
      });
      assert.equal(res.status, 200);
      ids.push(res.body.proof.id as string);
    }
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });
}

/** The hash with one bit flipped (the bit number wraps around the hash's length). */
export function flip(hash: Uint8Array, bit: number): Buffer {
  const copy = Buffer.from(hash);
  copy[Math.floor(bit / 8) % copy.length]! ^= 1 << (bit % 8);
  return copy;
}
