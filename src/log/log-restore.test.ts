import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { backUp } from '../../test/db-backup.ts';
import {
  api,
  expectError,
  loggedProof,
  makeDataDir,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';
import { parseCheckpoint } from '../core/signed-note.ts';
import { LogInconsistent } from './log-guard.ts';

const dataDir = makeDataDir();
/** The record lives apart from the keys here (LOG_STATE_DIR), as it would beside keys mounted read-only. */
const stateDir = path.join(dataDir, 'log-state');
const start = () => startServer({ dataDir, env: { LOG_STATE_DIR: stateDir } });

const records = () => readdirSync(stateDir).filter((name) => name.startsWith('log-checkpoint-'));
const bodyOf = (note: string) => parseCheckpoint(note.slice(0, note.indexOf('\n\n') + 1));
const REFUSAL = 'the transparency log signs nothing and new proofs are refused';

async function notarize(server: TestServer, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
    assert.equal(res.status, 200, res.text);
    ids.push(res.body.proof.id as string);
  }
  return ids;
}

/** The checkpoint of `size` entries once it is served and recorded in the log state directory. */
async function published(server: TestServer, size: number): Promise<string> {
  const { text } = await eventually(() => api(server.baseUrl, '/log/checkpoint'), {
    what: `the log reaches ${size} entries`,
    until: (res) => res.status === 200 && bodyOf(res.text).size === size,
  });
  await eventually(() => records().some((name) => name.endsWith(`-${size}`)), {
    what: `the checkpoint of ${size} entries is recorded`,
  });
  return text;
}

test('a database restored from an older backup stops the log, says why, and starts again once the operator acts', async () => {
  const backups = [];
  let server = await start();
  let pending: string;
  try {
    await notarize(server, 3);
    await published(server, 3);
    // The backup also holds a proof the sequencer has not taken yet: the restored log would sign it.
    await server.ctx.sequencer.stop();
    [pending = ''] = await notarize(server, 1);
  } finally {
    await server.close();
  }
  const older = backUp(dataDir);
  backups.push(older);

  server = await start();
  let checkpoint6: string;
  try {
    await notarize(server, 2);
    checkpoint6 = await published(server, 6);
  } finally {
    await server.close();
  }
  const newer = backUp(dataDir);
  backups.push(newer);
  const [record = ''] = records();
  assert.deepEqual(records(), [record], 'one record: the smaller ones are removed');
  assert.equal(readFileSync(path.join(stateDir, record), 'utf8'), checkpoint6);
  assert.equal(statSync(path.join(stateDir, record)).mode & 0o777, 0o600);
  assert.ok(
    !readdirSync(path.join(dataDir, 'keys')).some((name) => name.startsWith('log-checkpoint-')),
    'LOG_STATE_DIR holds the record, not the keys directory',
  );

  try {
    // The database goes back to the older copy; the record stays.
    older.restore();
    server = await start();
    const lines = await server.logged((all) => all.some((l) => l.includes(REFUSAL)), 'the refusal is logged');
    const logged = JSON.parse(lines.find((l) => l.includes(REFUSAL)) ?? '{}') as {
      level: number;
      msg: string;
    };
    assert.equal(logged.level, 50, 'an error');
    assert.match(
      logged.msg,
      /The database holds a log of 3 entries, but the log published a checkpoint of 6 entries/,
    );
    assert.match(logged.msg, /Restore the database backup that holds the whole published log \(at least 6/);
    assert.match(logged.msg, /move the files log-checkpoint-[0-9a-f]{16}-\* .* aside/);
    assert.ok(logged.msg.includes(stateDir), 'the log names the directory');

    const refused = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
    expectError(refused, 503, 'service_unavailable');
    const health = expectError(await api(server.baseUrl, '/health'), 503, 'service_unavailable');
    assert.equal(health.details.reason, 'log_stopped');
    assert.equal(health.details.log.ok, false);
    assert.match(health.details.log.reason, /3 entries, but the log published a checkpoint of 6 entries/);
    assert.match(health.details.log.action, /Restore the database backup/);
    assert.equal(health.details.database.ok, true);
    assert.ok(!JSON.stringify(health).includes(dataDir), '/health names no directory of the machine');

    // A step signs nothing: the pending proof stays out of the log, the served checkpoint and the record
    // stay what they were.
    await assert.rejects(server.ctx.sequencer.integrate(), LogInconsistent);
    assert.equal((await api(server.baseUrl, `/api/proofs/${pending}`)).body.proof.log, null);
    assert.equal(bodyOf((await api(server.baseUrl, '/log/checkpoint')).text).size, 3);
    assert.deepEqual(records(), [record]);
    assert.equal(readFileSync(path.join(stateDir, record), 'utf8'), checkpoint6);
    assert.equal(server.logs.filter((l) => l.includes(REFUSAL)).length, 1, 'told once');
    await server.close();

    // The operator puts the newer backup back: the log carries on from it.
    newer.restore();
    server = await start();
    assert.equal((await api(server.baseUrl, '/health')).body.log.ok, true);
    const [next = ''] = await notarize(server, 1);
    assert.equal((await loggedProof(server.baseUrl, next)).log.leafIndex, 6);
    await published(server, 7);
    await server.close();

    // Or those entries are lost for good: the operator moves the record aside knowingly, and the log
    // goes on from the older tree, a fork of the checkpoints published since.
    older.restore();
    const aside = path.join(dataDir, 'log-state-aside');
    mkdirSync(aside);
    for (const name of records()) renameSync(path.join(stateDir, name), path.join(aside, name));
    server = await start();
    assert.equal((await api(server.baseUrl, '/health')).status, 200);
    assert.equal((await loggedProof(server.baseUrl, pending)).log.leafIndex, 3);
    await notarize(server, 2);
    const forked = bodyOf(await published(server, 6));
    assert.notDeepEqual(forked.rootHash, bodyOf(checkpoint6).rootHash, 'another tree of 6 entries');
  } finally {
    await server.close();
    server.cleanup();
    for (const backup of backups) backup.discard();
  }
});
