import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import { api, makeDataDir, type TestServer } from '../../test/helper.ts';
import { GO_NOTE_MISSING, goOpenNotes } from '../../test/go-note.ts';
import { eventually } from '../../test/wait.ts';
import { startWitness, type RunningWitness } from '../witness/witness-test-setup.ts';
import { lineOf, logKeyDir, notarized, serviceWith } from './witnessing-test-setup.ts';

const sizeOf = (note: string) => parseCheckpoint(note.slice(0, note.indexOf('\n\n') + 1)).size;

/**
 * The service and `hashproof witness` (docs/witness.md), the witness anyone can run, as two separate
 * programs on loopback: what one sends, the other checks and cosigns, and the service checks the
 * cosignature before it serves it.
 */
describe('the service cosigned by hashproof witness', () => {
  let witness: RunningWitness;
  let server: TestServer;
  after(async () => {
    await server?.close();
    server?.cleanup();
    await witness?.stop();
  });

  test('checkpoints cosigned, a 409 followed, the served note read by Go', async () => {
    const { dataDir, logVkey } = logKeyDir();
    witness = await startWitness([
      '--keys-dir',
      makeDataDir(),
      '--state-dir',
      makeDataDir(),
      '--log',
      logVkey,
    ]);
    const w = { vkey: witness.vkey, url: witness.baseUrl };
    server = await serviceWith(dataDir, [w]);
    const cosigned = (size: number) =>
      eventually(async () => (await api(server.baseUrl, '/log/checkpoint')).text, {
        what: `a checkpoint of ${size}+ entries cosigned by hashproof witness`,
        until: (note) => sizeOf(note) >= size && lineOf(note, w) !== undefined,
        timeoutMs: 20_000,
      });
    await notarized(server, 71);
    const first = await cosigned(1);
    openNote(first, parseVerifierKey(logVkey));

    // The service forgets what the witness holds: it sends `old 0`, meets the 409 and proves from there.
    await server.ctx.database.db.deleteFrom('witness_status').execute();
    for (let n = 72; n < 76; n++) await notarized(server, n);
    const later = await cosigned(sizeOf(first) + 4);
    const status = await eventually(
      async () => (await api(server.baseUrl, '/api/status')).body.components.witnesses[0],
      { what: 'the witness ok at the new size', until: (s) => s?.cosignedSize === sizeOf(later) },
    );
    assert.equal(status.state, 'ok');
    assert.equal(status.url, witness.baseUrl);
    if (!GO_NOTE_MISSING) {
      const [answer] = goOpenNotes([{ vkey: witness.vkey, note: later }]);
      assert.deepEqual(answer, { ok: true, text: later.slice(0, later.indexOf('\n\n') + 1) });
    }
  });
});
