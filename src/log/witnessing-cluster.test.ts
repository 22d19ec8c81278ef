import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { POSTGRES_URL, postgresSchema, startInstance, type Instance } from '../../test/cluster.ts';
import { api, notarizeBody, requireService, sampleHash } from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';
import { lineOf, logKeyDir, PUBLIC_BASE_URL, startTestWitness } from './witnessing-test-setup.ts';

const skip = await requireService('PostgreSQL', POSTGRES_URL);

/**
 * Two real service processes sharing one PostgreSQL schema and one log: one of them asks the witness
 * (the lease), so each checkpoint reaches it once; when that one stops, the other takes over.
 */
describe('witnessing with several instances', { skip }, () => {
  const instances: Instance[] = [];
  const { dataDir, logVkey } = logKeyDir();
  after(async () => {
    await Promise.all(instances.map((i) => i.stop('SIGKILL')));
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('each checkpoint is sent to the witness once; another instance takes over when the holder stops or dies', async () => {
    const witness = await startTestWitness(logVkey);
    after(() => witness.close());
    const env = {
      DATABASE_URL: await postgresSchema(dataDir),
      SIGNING_KEYS_DIR: `${dataDir}/keys`,
      PUBLIC_BASE_URL,
      RATE_LIMIT_MAX: '0',
      WITNESSES: `${witness.vkey}@${witness.url}`,
      WITNESS_ALLOW_PRIVATE_URLS: 'true',
      WITNESS_INTERVAL_MS: '10',
    };
    let n = 0;
    const notarize = async (instance: Instance) => {
      const res = await api(instance.baseUrl, '/api/proof/notarize', {
        body: notarizeBody({ contentHash: sampleHash(9000 + n++) }),
      });
      assert.equal(res.status, 200, res.text);
    };
    const cosigned = (size: number) =>
      eventually(() => witness.state?.size ?? 0, {
        what: `the witness cosigns ${size} entries`,
        until: (s) => s >= size,
        timeoutMs: 30_000,
      });

    // The first instance takes the lease before the second starts.
    const first = await startInstance(env);
    instances.push(first);
    await notarize(first);
    await cosigned(1);
    const second = await startInstance(env);
    instances.push(second);
    for (let i = 0; i < 20; i++) await notarize(i % 2 === 0 ? first : second);
    await cosigned(21);
    // Both instances serve the cosigned checkpoint (read from the shared database).
    for (const instance of [first, second]) {
      const note = await eventually(async () => (await api(instance.baseUrl, '/log/checkpoint')).text, {
        what: 'the served checkpoint carries the cosignature',
        until: (text) => lineOf(text, witness) !== undefined,
      });
      assert.ok(note.startsWith(`${PUBLIC_BASE_URL.slice(7)}/log\n21\n`), note);
    }

    // The lease holder stops (and gives up its lease); the second sends the next checkpoints.
    assert.equal(await first.stop('SIGTERM'), 0);
    const sentBefore = witness.requests.length;
    for (let i = 0; i < 5; i++) await notarize(second);
    await cosigned(26);
    assert.ok(witness.requests.length > sentBefore);

    // A lease holder that dies without a word (SIGKILL): its lease runs out (30 s), then another takes it.
    const third = await startInstance(env);
    instances.push(third);
    await second.stop('SIGKILL');
    for (let i = 0; i < 3; i++) await notarize(third);
    await eventually(() => witness.state?.size ?? 0, {
      what: 'the third instance takes over once the lease ran out',
      until: (s) => s >= 29,
      timeoutMs: 90_000,
      intervalMs: 250,
    });

    const sizes = witness.requests.map((r) => r.size);
    assert.deepEqual(
      sizes.filter((size, i) => sizes.indexOf(size) !== i),
      [],
      `no checkpoint sent twice: ${JSON.stringify(witness.requests)}`,
    );
    assert.ok(
      witness.requests.every((r) => r.status === 200),
      JSON.stringify(witness.requests),
    );
    const status = await eventually(
      async () => (await api(third.baseUrl, '/api/status')).body.components.witnesses,
      { what: "the witness's size recorded", until: (list) => list[0]?.cosignedSize === 29 },
    );
    assert.equal(status[0].state, 'ok');
  });
});
