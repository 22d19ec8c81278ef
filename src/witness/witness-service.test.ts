import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { parseCosignerKey, verifiedCosigners, verifyCosignature } from '../core/cosignature.ts';
import { parseCheckpoint } from '../core/signed-note.ts';
import {
  api,
  notarizeBody,
  sampleHash,
  scratchDirs,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { GO_NOTE_MISSING, goOpenNotes } from '../../test/go-note.ts';
import { eventually } from '../../test/wait.ts';
import { addCheckpoint, startWitness, submission, type RunningWitness } from './witness-test-setup.ts';

/**
 * The witness fed by the service's own log, as a log submits to it: the checkpoints of /log/checkpoint
 * and the consistency proofs of /api/log/consistency, the witness's key being the log's verifier key.
 */

const dirs = scratchDirs();
let server: TestServer;
let witness: RunningWitness;

/** Makes `count` more proofs and returns the log's signed checkpoint once it holds `size` entries. */
async function grow(count: number, size: number): Promise<{ note: string; text: string; size: number }> {
  for (let i = 0; i < count; i++) {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({
        contentHash: sampleHash(9000 + size + i),
        idempotencyKey: `witnessed-${size}-${i}`,
      }),
    });
    assert.equal(res.status, 200, res.text);
  }
  const res = await eventually(() => api(server.baseUrl, '/log/checkpoint'), {
    what: `the log reaches ${size} entries`,
    until: (r) =>
      r.status === 200 && parseCheckpoint(r.text.slice(0, r.text.indexOf('\n\n') + 1)).size >= size,
    timeoutMs: 60_000,
  });
  const text = res.text.slice(0, res.text.indexOf('\n\n') + 1);
  return { note: res.text, text, size: parseCheckpoint(text).size };
}

before(async () => {
  server = await startServer();
  witness = await startWitness([
    '--keys-dir',
    path.join(dirs(), 'keys'),
    '--state-dir',
    path.join(dirs(), 'state'),
    '--log',
    server.ctx.log.verifierKey,
  ]);
});
after(async () => {
  await witness?.stop();
  await server?.close();
  server?.cleanup();
});

test("the witness cosigns the service's checkpoints along its consistency proofs, and only those", async () => {
  const cosigner = parseCosignerKey(witness.vkey);
  const first = await grow(5, 5);
  const firstAnswer = await addCheckpoint(witness.baseUrl, submission(0, [], first.note));
  assert.equal(firstAnswer.status, 200, firstAnswer.text);
  verifyCosignature(first.text, firstAnswer.text.trimEnd(), cosigner);

  const second = await grow(7, first.size + 7);
  const consistency = await api(server.baseUrl, `/api/log/consistency?from=${first.size}&to=${second.size}`);
  assert.equal(consistency.status, 200, consistency.text);
  const proof = (consistency.body.hashes as string[]).map((hash) => Buffer.from(hash, 'base64'));
  assert.ok(proof.length > 0);

  // Without the proof, or with it altered, nothing is cosigned.
  assert.equal((await addCheckpoint(witness.baseUrl, submission(first.size, [], second.note))).status, 422);
  const altered = proof.map((hash, i) => (i === proof.length - 1 ? Buffer.alloc(32, 7) : hash));
  assert.equal(
    (await addCheckpoint(witness.baseUrl, submission(first.size, altered, second.note))).status,
    422,
  );
  // A stale old size learns the witness's.
  const stale = await addCheckpoint(witness.baseUrl, submission(0, [], second.note));
  assert.equal(stale.status, 409);
  assert.equal(stale.text, `${first.size}\n`);

  const answer = await addCheckpoint(witness.baseUrl, submission(first.size, proof, second.note));
  assert.equal(answer.status, 200, answer.text);
  const cosigned = second.note + answer.text;
  assert.deepEqual(
    verifiedCosigners(cosigned, [cosigner]).map(({ cosigner }) => cosigner.name),
    [cosigner.name],
  );
  if (!GO_NOTE_MISSING) {
    // Go's note.Open reads the log's checkpoint with the witness's line appended (tlog-witness: "the
    // client MAY concatenate it to the checkpoint, and use a note verification function").
    const [opened] = goOpenNotes([{ vkey: witness.vkey, note: cosigned }]);
    assert.deepEqual(opened, { ok: true, text: second.text });
  }
});
