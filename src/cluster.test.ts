import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import {
  POSTGRES_URL,
  postOnFreshConnection,
  postgresSchema,
  startInstance,
  startInstances,
  type Instance,
} from '../test/cluster.ts';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  makeDataDir,
  notarizeBody,
  REDIS_URL,
  requireService,
} from '../test/helper.ts';
import { eventually, within } from '../test/wait.ts';
import { deliveredProofId, startWebhookReceiver } from '../test/webhook-receiver.ts';
import pg from 'pg';
import { verifyConsistency } from './core/merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from './core/signed-note.ts';

const skip = (await requireService('PostgreSQL', POSTGRES_URL)) || (await requireService('Redis', REDIS_URL));

/** The signed note of the largest tree recorded in a log state directory (docs/deploy.md). */
function largestRecord(dir: string): string | undefined {
  const sizes = readdirSync(dir)
    .map((name) => /^log-checkpoint-[0-9a-f]{16}-(\d+)$/.exec(name)?.[1])
    .filter((size) => size !== undefined)
    .map(Number);
  if (sizes.length === 0) return undefined;
  const largest = Math.max(...sizes);
  const name = readdirSync(dir).find((n) => n.endsWith(`-${largest}`) && n.startsWith('log-checkpoint-'));
  return name === undefined ? undefined : readFileSync(`${dir}/${name}`, 'utf8');
}

/**
 * Two real service processes on two ports against one PostgreSQL schema and one Redis: what an operator
 * runs behind a load balancer (docs/deploy.md).
 */
describe('several instances behind one address', { skip }, () => {
  let instances: Instance[] = [];
  const dataDir = makeDataDir();
  const env: Record<string, string> = {};

  before(async () => {
    Object.assign(env, {
      DATABASE_URL: await postgresSchema(dataDir),
      REDIS_URL,
      REDIS_KEY_PREFIX: `hashproof-test-${randomUUID()}:`,
      SIGNING_KEYS_DIR: `${dataDir}/keys`,
      SERVICE_ADMIN_KEY: ADMIN_KEY,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      RATE_LIMIT_MAX: '100000',
      // The one public address behind the load balancer; it also names the log in every checkpoint.
      PUBLIC_BASE_URL: 'https://proofs.example.com',
    });
    // Started together, as a rollout would: migrations are serialized by an advisory lock.
    instances = await startInstances(2, env);
  });
  after(async () => {
    await Promise.all(instances.map((i) => i.stop('SIGKILL')));
  });

  const pick = (i: number) => instances[i % instances.length]!.baseUrl;

  test('100 concurrent requests with one key spread over both instances create one proof', async () => {
    const body = notarizeBody({ idempotencyKey: `cluster-${randomUUID()}` });
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, i) => api(pick(i), '/api/proof/notarize', { body })),
    );
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
    assert.equal(responses.filter((r) => r.body.idempotentReplay === false).length, 1);
    assert.equal(new Set(responses.map((r) => r.body.proof.id)).size, 1);
    const search = await api(pick(0), `/api/proofs/search?idempotencyKey=${body.idempotencyKey as string}`);
    assert.equal(search.body.proofs.length, 1);
  });

  test('a proof created on one instance reads and verifies on the other (shared keys)', async () => {
    const created = await api(pick(0), '/api/proof/notarize', { body: notarizeBody() });
    const verified = await api(pick(1), `/api/verify/proofs/${created.body.proof.id}`);
    assert.equal(verified.body.verified, true);
  });

  test('each webhook event is delivered once, although both instances run a dispatcher', async () => {
    const receiver = await startWebhookReceiver();
    // A pair of its own, on a database of its own: stopping it stops every dispatcher that could send.
    const pairDir = makeDataDir();
    const pairEnv = {
      ...env,
      DATABASE_URL: await postgresSchema(pairDir),
      SIGNING_KEYS_DIR: `${pairDir}/keys`,
    };
    const pair = await startInstances(2, pairEnv);
    const on = (i: number) => pair[i % pair.length]!.baseUrl;
    try {
      const admin = (base: string, path: string, body?: unknown) =>
        api(base, path, { method: body === undefined ? 'GET' : 'POST', body, headers: adminHeaders });
      const account = (await admin(on(0), '/api/accounts', {})).body.account;
      const key = (await admin(on(1), `/api/accounts/${account.id}/api-keys`, {})).body.key;
      const hook = await admin(on(0), `/api/accounts/${account.id}/webhooks`, { url: receiver.url });
      receiver.setSecret(hook.body.secret);
      const created = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          api(on(i), '/api/proof/notarize', { body: notarizeBody(), headers: { 'x-service-key': key } }),
        ),
      );
      assert.ok(created.every((r) => r.status === 200));
      await receiver.waitFor(30, 20_000);
      // A stopping instance finishes every delivery it has claimed before it exits: once both have
      // stopped, no second copy of an event can still be on its way.
      assert.deepEqual(await Promise.all(pair.map((instance) => instance.stop('SIGTERM'))), [0, 0]);
      assert.equal(receiver.received.length, 30, 'no event twice');
      assert.ok(receiver.received.every((r) => r.verifyError === undefined));
      const proofIds = new Set(receiver.received.map(deliveredProofId));
      assert.deepEqual(proofIds, new Set(created.map((r) => r.body.proof.id)));
    } finally {
      await Promise.all(pair.map((instance) => instance.stop('SIGKILL')));
      await receiver.close();
    }
  });

  test('the Merkle log has one writer at a time and never forks, with both sequencers running', async () => {
    const created = await Promise.all(
      Array.from({ length: 200 }, (_, i) => api(pick(i), '/api/proof/notarize', { body: notarizeBody() })),
    );
    assert.ok(created.every((r) => r.status === 200));
    const client = new pg.Client({ connectionString: env.DATABASE_URL });
    await client.connect();
    try {
      const { size } = await eventually(
        async () => ({
          size: Number((await client.query('select tree_size from log_head')).rows[0].tree_size),
          total: Number((await client.query('select count(*) as n from proofs')).rows[0].n),
        }),
        {
          what: 'the log integrates every proof',
          until: ({ size, total }) => size >= total,
          timeoutMs: 20_000,
        },
      );
      // Every proof has exactly one leaf, and the leaves are exactly 0 … size-1.
      const leaves = await client.query('select leaf_index from proofs order by leaf_index');
      assert.deepEqual(
        leaves.rows.map((row: { leaf_index: string }) => Number(row.leaf_index)),
        Array.from({ length: size }, (_, i) => i),
      );
      // Each checkpoint either instance signed verifies and is a prefix of the final tree.
      const checkpoints = await client.query(
        'select tree_size, checkpoint from log_checkpoints order by tree_size',
      );
      assert.ok(checkpoints.rows.length >= 2, 'several checkpoints');
      // The record of the log state, in the keys directory both share, ends at the final tree.
      const finalNote = checkpoints.rows.at(-1).checkpoint as string;
      await eventually(() => largestRecord(`${dataDir}/keys`), {
        what: 'the shared log state records the final checkpoint',
        until: (note) => note === finalNote,
      });
      const keys = (await api(pick(0), '/.well-known/hashproof-keys.json')).body.keys as {
        use: string;
        verifierKey?: string;
      }[];
      const verifier = parseVerifierKey(keys.find((k) => k.use === 'log')?.verifierKey ?? '');
      const final = parseCheckpoint(openNote(checkpoints.rows.at(-1).checkpoint as string, verifier));
      assert.equal(final.size, size);
      for (const row of checkpoints.rows as { tree_size: string; checkpoint: string }[]) {
        const checkpoint = parseCheckpoint(openNote(row.checkpoint, verifier));
        if (checkpoint.size === 0 || checkpoint.size === final.size) continue;
        const proof = await api(
          pick(checkpoint.size),
          `/api/log/consistency?from=${checkpoint.size}&to=${final.size}`,
        );
        const hashes = (proof.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
        assert.ok(
          verifyConsistency(checkpoint.size, final.size, checkpoint.rootHash, final.rootHash, hashes),
          `size ${checkpoint.size}`,
        );
      }
    } finally {
      await client.end();
    }
  });

  test('instances with log state directories of their own each record the checkpoints of the other', async () => {
    const pairDir = makeDataDir();
    const pairEnv = {
      ...env,
      DATABASE_URL: await postgresSchema(pairDir),
      SIGNING_KEYS_DIR: `${pairDir}/keys`,
    };
    // The first start creates the keys; the second instance shares them.
    const first = await startInstance({ ...pairEnv, LOG_STATE_DIR: `${pairDir}/state-a` });
    const second = await startInstance({ ...pairEnv, LOG_STATE_DIR: `${pairDir}/state-b` });
    try {
      const pair = [first, second];
      const created = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          api(pair[i % 2]!.baseUrl, '/api/proof/notarize', { body: notarizeBody() }),
        ),
      );
      assert.deepEqual(new Set(created.map((r) => r.status)), new Set([200]));
      const checkpoint = await eventually(() => api(first.baseUrl, '/log/checkpoint'), {
        what: 'the log integrates every proof',
        until: (res) => res.status === 200 && res.text.split('\n')[1] === '60',
        timeoutMs: 20_000,
      });
      for (const dir of ['state-a', 'state-b']) {
        await eventually(() => largestRecord(`${pairDir}/${dir}`), {
          what: `${dir} records the checkpoint of 60 entries`,
          until: (note) => note === checkpoint.text,
        });
      }
      const health = await Promise.all(pair.map((i) => api(i.baseUrl, '/health')));
      assert.deepEqual(
        health.map((h) => h.body.log),
        [{ ok: true }, { ok: true }],
      );
    } finally {
      await Promise.all([first.stop('SIGKILL'), second.stop('SIGKILL')]);
    }
  });

  test('the rate limit is shared through Redis: 61 requests spread over two processes, exactly one 429', async () => {
    const limited = {
      ...env,
      RATE_LIMIT_MAX: '60',
      RATE_LIMIT_WINDOW_MS: '60000',
      REDIS_KEY_PREFIX: `hashproof-test-${randomUUID()}:`,
    };
    const pair = await startInstances(2, limited);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 61; i++)
        statuses.push((await api(pair[i % 2]!.baseUrl, '/api/proofs/recent')).status);
      assert.equal(statuses.filter((status) => status === 429).length, 1);
      assert.equal(statuses.at(-1), 429);
    } finally {
      await Promise.all(pair.map((instance) => instance.stop('SIGKILL')));
    }
  });

  test('killing one instance mid-load loses no acknowledged proof, and the other carries on', async () => {
    const [victim, survivor] = instances as [Instance, Instance];
    const acknowledged: string[] = [];
    let failures = 0;
    // The kill comes once the victim has acknowledged a few proofs: in the middle of the load.
    const victimBusy = Promise.withResolvers<void>();
    let victimAcknowledged = 0;
    const send = async (base: string) => {
      const answer = await postOnFreshConnection(
        `${base}/api/proof/notarize`,
        JSON.stringify(notarizeBody()),
      );
      if (answer?.status === 200) {
        acknowledged.push((JSON.parse(answer.body) as { proof: { id: string } }).proof.id);
        if (base === victim.baseUrl && ++victimAcknowledged === 4) victimBusy.resolve();
      } else failures += 1;
    };
    const load = (async () => {
      for (let round = 0; round < 40; round++) {
        await Promise.all([
          send(victim.baseUrl),
          send(victim.baseUrl),
          send(survivor.baseUrl),
          send(survivor.baseUrl),
        ]);
      }
    })();
    await within(victimBusy.promise, { what: 'the victim acknowledges its first proofs' });
    await victim.stop('SIGKILL');
    await load;
    assert.ok(failures > 0, 'requests to the killed instance failed');
    assert.ok(acknowledged.length > 80, `the survivor kept serving (${acknowledged.length} acknowledged)`);
    for (const id of acknowledged) {
      const res = await api(survivor.baseUrl, `/api/verify/proofs/${id}`);
      assert.equal(res.status, 200, id);
      assert.equal(res.body.verified, true);
    }
  });
});
