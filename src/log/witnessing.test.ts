import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { parseCosignerKey } from '../core/cosignature.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import { parseTlogProof } from '../core/tlog-proof.ts';
import { adminHeaders, api, expectError, type TestServer } from '../../test/helper.ts';
import { GO_NOTE_MISSING, goOpenNotes } from '../../test/go-note.ts';
import { eventually } from '../../test/wait.ts';
import {
  lineOf,
  logKeyDir,
  notarized,
  serviceWith,
  startTestWitness,
  type TestWitness,
} from './witnessing-test-setup.ts';

const sizeOf = (note: string) => parseCheckpoint(note.slice(0, note.indexOf('\n\n') + 1)).size;
const noteText = (note: string) => note.slice(0, note.indexOf('\n\n') + 1);

/** The served checkpoint once it is of at least `size` entries and carries a line of each witness. */
function cosignedCheckpoint(server: TestServer, size: number, witnesses: TestWitness[]): Promise<string> {
  return eventually(async () => (await api(server.baseUrl, '/log/checkpoint')).text, {
    what: `a checkpoint of ${size}+ entries cosigned by ${witnesses.length} witness(es)`,
    until: (note) => sizeOf(note) >= size && witnesses.every((w) => lineOf(note, w) !== undefined),
    timeoutMs: 20_000,
  });
}

const witnessStatus = async (server: TestServer) =>
  (await api(server.baseUrl, '/api/status')).body.components.witnesses as any[];

describe('the service asks witnesses to cosign its checkpoints', () => {
  const stops: (() => Promise<void>)[] = [];
  after(async () => {
    for (const stop of stops.reverse()) await stop();
  });
  async function setUp(count: number, env: Record<string, string> = {}) {
    const { dataDir, logVkey } = logKeyDir();
    const witnesses: TestWitness[] = [];
    for (let i = 0; i < count; i++) {
      const witness = await startTestWitness(logVkey, `witness.test/w${i}`);
      stops.push(() => witness.close());
      witnesses.push(witness);
    }
    const server = await serviceWith(dataDir, witnesses, env);
    stops.push(async () => {
      await server.close();
      server.cleanup();
    });
    return { server, witnesses, logVkey };
  }

  test('each checkpoint is cosigned and served with the lines, the log signature byte for byte', async () => {
    const { server, witnesses, logVkey } = await setUp(2);
    const first = await notarized(server, 1);
    const note = await cosignedCheckpoint(server, first.leafIndex + 1, witnesses);
    // The log's own note, then the witnesses' lines in their configured order, and nothing else.
    const own = (await server.ctx.log.latest(sizeOf(note)))!;
    const signed = sizeOf(own.checkpoint) === sizeOf(note) ? own.checkpoint : null;
    assert.ok(signed !== null);
    assert.equal(note, `${signed}${lineOf(note, witnesses[0]!)}\n${lineOf(note, witnesses[1]!)}\n`);
    assert.equal(openNote(note, parseVerifierKey(logVkey)), noteText(note), 'the log signature verifies');
    // tlog-proof and inclusion carry the same cosigned checkpoint.
    const tlog = parseTlogProof((await api(server.baseUrl, `/api/proofs/${first.id}/tlog-proof`)).text);
    assert.equal(tlog.checkpoint, note);
    const inclusion = await api(server.baseUrl, `/api/proofs/${first.id}/inclusion?treeSize=${sizeOf(note)}`);
    assert.equal(inclusion.body.checkpoint, note);
    // The largest cosigned checkpoint, for clients that want one (the newest may not be cosigned yet).
    const newest = await api(server.baseUrl, '/api/log/cosigned-checkpoint');
    assert.equal(newest.status, 200);
    assert.ok(sizeOf(newest.text) >= sizeOf(note) && lineOf(newest.text, witnesses[0]!) !== undefined);
    const both = await api(server.baseUrl, '/api/log/cosigned-checkpoint?witnesses=2');
    assert.ok(
      witnesses.every((w) => lineOf(both.text, w) !== undefined),
      both.text,
    );
    expectError(await api(server.baseUrl, '/api/log/cosigned-checkpoint?witnesses=3'), 404, 'not_found');
    expectError(
      await api(server.baseUrl, '/api/log/cosigned-checkpoint?witnesses=0'),
      400,
      'invalid_request',
    );
    const verified = await api(server.baseUrl, `/api/verify/proofs/${first.id}`);
    assert.equal(verified.body.verified, true, 'the service still verifies the proof');
    // The first request had no size to start from (old 0, no proof); each later one proves consistency.
    assert.deepEqual(witnesses[0]!.requests[0], { old: 0, size: sizeOf(note), status: 200 });

    for (let n = 2; n <= 4; n++) await notarized(server, n);
    const later = await cosignedCheckpoint(server, sizeOf(note) + 3, witnesses);
    const grown = witnesses[0]!.requests.find((r) => r.old === sizeOf(note) && r.status === 200);
    assert.ok(grown !== undefined && grown.size > grown.old, JSON.stringify(witnesses[0]!.requests));
    assert.ok(
      witnesses[0]!.requests.every((r) => r.status === 200),
      'no request refused',
    );
    openNote(later, parseVerifierKey(logVkey));

    // The line is stored a moment before the witness's size is recorded.
    const status = await eventually(() => witnessStatus(server), {
      what: "each witness's cosigned size recorded",
      until: (list) => list.every((w, i) => w.cosignedSize === witnesses[i]!.state!.size),
    });
    assert.deepEqual(
      status.map(({ lastSuccessAt: _at, ...rest }) => rest),
      witnesses.map((w, i) => ({
        name: `witness.test/w${i}`,
        keyId: parseCosignerKey(w.vkey).keyId.toString('hex'),
        url: w.url,
        state: 'ok',
        consecutiveFailures: 0,
        lastError: null,
        cosignedSize: w.state!.size,
      })),
    );
    const metrics = (await api(server.baseUrl, '/metrics', { headers: adminHeaders })).text;
    const size = witnesses[0]!.state!.size;
    assert.match(
      metrics,
      new RegExp(
        `hashproof_witness_cosigned_tree_size\\{witness="witness.test/w0",url="${w0Url(witnesses)}"\\} ${size}`,
      ),
    );
    assert.match(metrics, /hashproof_witness_consecutive_failures\{witness="witness.test\/w1",[^}]*\} 0/);
    assert.match(metrics, /hashproof_witness_lag_entries\{witness="witness.test\/w0",[^}]*\} \d+/);
    checkWithGo(later, witnesses);
  });

  test('a witness that holds a size the service does not know answers 409; the service proves from there', async () => {
    const { server, witnesses } = await setUp(1);
    const [witness] = witnesses as [TestWitness];
    witness.mode = 'down';
    const first = await notarized(server, 11);
    await notarized(server, 12);
    // The witness cosigned this tree before (through another log client), unknown to the service.
    const before = (await api(server.baseUrl, '/log/checkpoint')).text;
    const { size, rootHash } = parseCheckpoint(noteText(before));
    witness.state = { size, root: rootHash };
    witness.mode = 'honest';
    await notarized(server, 13);
    const note = await cosignedCheckpoint(server, size + 1, witnesses);
    const conflict = witness.requests.find((r) => r.status === 409);
    assert.deepEqual(conflict && { old: conflict.old, status: conflict.status }, { old: 0, status: 409 });
    const proven = witness.requests.find((r) => r.status === 200);
    assert.equal(proven?.old, size, 'the retry proves consistency from the size the witness holds');
    assert.ok(sizeOf(note) > size);
    assert.ok(first.leafIndex < size);
  });

  test('garbage, a bad cosignature, a witness down: nothing stored, each failing with its reason', async () => {
    const { server, witnesses } = await setUp(4);
    const [honest, garbage, forged, down] = witnesses as [TestWitness, TestWitness, TestWitness, TestWitness];
    garbage.mode = 'garbage';
    forged.mode = 'bad-signature';
    down.mode = 'down';
    await notarized(server, 21);
    const note = await cosignedCheckpoint(server, 1, [honest]);
    for (const w of [garbage, forged, down]) assert.equal(lineOf(note, w), undefined);
    const status = await eventually(() => witnessStatus(server), {
      what: 'three witnesses failing',
      until: (list) => list.slice(1).every((w) => w.state === 'failing'),
    });
    assert.equal(status[0].state, 'ok');
    assert.match(status[1].lastError, /not signature lines/);
    assert.match(status[2].lastError, /refused: the cosignature does not verify/);
    assert.match(status[3].lastError, /HTTP 503.*down for maintenance/);
    assert.ok(status.slice(1).every((w) => w.consecutiveFailures >= 1));
    // Every answer refused above was still recorded as the witness's state: the forged one "cosigned".
    assert.equal(forged.state?.size, sizeOf(note));
    // A witness that recovers is asked again and cosigns.
    garbage.mode = 'honest';
    const healed = await cosignedCheckpoint(server, sizeOf(note), [honest, garbage]);
    assert.equal(lineOf(healed, forged), undefined);
    const after = await eventually(() => witnessStatus(server), {
      what: 'the recovered witness ok again',
      until: (list) => list[1].state === 'ok',
    });
    assert.equal(after[1].consecutiveFailures, 0);
    assert.equal(after[1].lastError, null);
  });

  test('a redirect is not followed; an answer over 64 KiB is not read', async () => {
    const { server, witnesses } = await setUp(3);
    const [honest, redirect, huge] = witnesses as [TestWitness, TestWitness, TestWitness];
    redirect.mode = 'redirect';
    huge.mode = 'huge';
    await notarized(server, 51);
    const note = await cosignedCheckpoint(server, 1, [honest]);
    const status = await eventually(() => witnessStatus(server), {
      what: 'two witnesses failing',
      until: (list) => list.slice(1).every((w) => w.state === 'failing'),
    });
    assert.match(status[1].lastError, /redirected \(HTTP 302\), not followed/);
    assert.match(status[2].lastError, /over 65536 bytes/);
    for (const w of [redirect, huge]) assert.equal(lineOf(note, w), undefined);
  });

  test('a slow witness delays no proof and no other witness', async () => {
    const { server, witnesses } = await setUp(2);
    const [fast, slow] = witnesses as [TestWitness, TestWitness];
    slow.mode = 'hold';
    const held = slow.held();
    const first = await notarized(server, 31);
    await held;
    // While the slow witness holds its request open: proofs are made and answered, the other cosigns.
    const second = await notarized(server, 32);
    const tlog = await api(server.baseUrl, `/api/proofs/${second.id}/tlog-proof`);
    assert.equal(tlog.status, 200);
    const note = await cosignedCheckpoint(server, second.leafIndex + 1, [fast]);
    assert.equal(lineOf(note, slow), undefined);
    assert.equal(slow.maxOpen, 1, 'one request open at a time');
    slow.release();
    await cosignedCheckpoint(server, second.leafIndex + 1, [fast, slow]);
    assert.ok(first.leafIndex < second.leafIndex);
  });

  test("credentials in a witness's URL are sent as Basic authentication and never shown", async () => {
    const { dataDir, logVkey } = logKeyDir();
    const witness = await startTestWitness(logVkey, 'witness.test/guarded');
    stops.push(() => witness.close());
    const guarded = { ...witness, url: witness.url.replace('http://', 'http://ops:s3cr3t-pw@') };
    const server = await serviceWith(dataDir, [guarded]);
    stops.push(async () => {
      await server.close();
      server.cleanup();
    });
    await notarized(server, 61);
    await cosignedCheckpoint(server, 1, [witness]);
    assert.equal(witness.authorizations[0], `Basic ${Buffer.from('ops:s3cr3t-pw').toString('base64')}`);
    const status = await api(server.baseUrl, '/api/status');
    assert.equal(status.body.components.witnesses[0].url, witness.url);
    const metrics = await api(server.baseUrl, '/metrics', { headers: adminHeaders });
    for (const text of [status.text, metrics.text, server.logs.join('\n')])
      assert.doesNotMatch(text, /s3cr3t/);
  });

  test('a witness on a private address is refused unless WITNESS_ALLOW_PRIVATE_URLS', async () => {
    const { server, witnesses } = await setUp(1, { WITNESS_ALLOW_PRIVATE_URLS: 'false' });
    await notarized(server, 41);
    const none = await api(server.baseUrl, '/api/log/cosigned-checkpoint');
    assert.equal(none.status, 404);
    assert.equal(none.body.error.code, 'not_found');
    const [status] = await eventually(() => witnessStatus(server), {
      what: 'the witness refused',
      until: (list) => list[0].state === 'failing',
    });
    assert.match(status.lastError, /not a public address/);
    assert.equal(witnesses[0]!.requests.length, 0, 'no connection was made');
  });
});

const w0Url = (witnesses: TestWitness[]) => witnesses[0]!.url.replace(/[.]/g, '\\.');

/** Go's note.Open, with a verifier of each witness's cosignature, accepts the served checkpoint. */
function checkWithGo(note: string, witnesses: TestWitness[]): void {
  if (GO_NOTE_MISSING) return;
  for (const answer of goOpenNotes(witnesses.map((w) => ({ vkey: w.vkey, note }))))
    assert.deepEqual(answer, { ok: true, text: noteText(note) });
}
