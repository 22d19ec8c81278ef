import { test } from 'node:test';
import assert from 'node:assert/strict';
import { postOnFreshConnection, startInstance, type Instance } from '../test/cluster.ts';
import { setTimeout as randomMoment } from 'node:timers/promises';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  inclusionChecked,
  makeDataDir,
  notarizeBody,
  testDatabaseUrl,
} from '../test/helper.ts';
import { START_TIMEOUT_MS } from '../test/process.ts';
import { within } from '../test/wait.ts';
import { deliveredProofId, startWebhookReceiver } from '../test/webhook-receiver.ts';
import { verifyConsistency } from './core/merkle.ts';
import {
  openNote,
  parseCheckpoint,
  parseVerifierKey,
  type Checkpoint,
  type NoteVerifier,
} from './core/signed-note.ts';

/** Kills per run: a few in the test suite, 20 for the long run (CRASH_KILLS=20 npm test). */
const KILLS = Number(process.env.CRASH_KILLS ?? 3);

/** The latest checkpoint, its signature checked; undefined before the log has signed one. */
async function latestCheckpoint(baseUrl: string, verifier: NoteVerifier): Promise<Checkpoint | undefined> {
  const res = await api(baseUrl, '/log/checkpoint');
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, res.text);
  return parseCheckpoint(openNote(res.text, verifier));
}

/** The log at `newer` extends the log at `older`: RFC 9162 consistency proof, fetched and verified. */
async function assertConsistent(baseUrl: string, older: Checkpoint, newer: Checkpoint): Promise<void> {
  assert.ok(newer.size >= older.size, `the log shrank from ${older.size} to ${newer.size}`);
  if (older.size === 0) return;
  const res = await api(baseUrl, `/api/log/consistency?from=${older.size}&to=${newer.size}`);
  assert.equal(res.status, 200, res.text);
  const hashes = (res.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
  assert.ok(
    verifyConsistency(older.size, newer.size, older.rootHash, newer.rootHash, hashes),
    `the tree of ${newer.size} does not extend the tree of ${older.size} signed before a kill`,
  );
}

test(
  `SIGKILL at random moments (${KILLS} times) loses no acknowledged proof and no event`,
  // Each of its KILLS + 1 starts may take minutes on a busy machine (START_TIMEOUT_MS).
  { timeout: 240_000 + (KILLS + 1) * START_TIMEOUT_MS },
  async (t) => {
    const dataDir = makeDataDir();
    const receiver = await startWebhookReceiver();
    const env = {
      DATABASE_URL: await testDatabaseUrl(dataDir),
      SIGNING_KEYS_DIR: `${dataDir}/keys`,
      SERVICE_ADMIN_KEY: ADMIN_KEY,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      RATE_LIMIT_MAX: '0',
    };
    let instance: Instance = await startInstance(env);
    const account = (await api(instance.baseUrl, '/api/accounts', { body: {}, headers: adminHeaders })).body
      .account;
    const key = (
      await api(instance.baseUrl, `/api/accounts/${account.id}/api-keys`, { body: {}, headers: adminHeaders })
    ).body.key as string;
    const hook = await api(instance.baseUrl, `/api/accounts/${account.id}/webhooks`, {
      body: { url: receiver.url },
      headers: adminHeaders,
    });
    receiver.setSecret(hook.body.secret);
    const keys = (await api(instance.baseUrl, '/.well-known/hashproof-keys.json')).body.keys as {
      use: string;
      verifierKey?: string;
    }[];
    const verifier = parseVerifierKey(keys.find((k) => k.use === 'log')?.verifierKey ?? '');
    /** The checkpoint each killed instance last published. */
    const seenBeforeKills: Checkpoint[] = [];

    const acknowledged = new Map<string, string>(); // idempotencyKey → proof id
    const keysSent: string[] = [];
    /** Settles once `acknowledged` holds this many proofs. */
    let loadGoing = { count: Infinity, reached: () => {} };
    try {
      for (let kill = 0; kill < KILLS; kill++) {
        let isRunning = true;
        const workers = Array.from({ length: 8 }, async (_, worker) => {
          for (let i = 0; isRunning; i++) {
            // Some keys are sent again after a crash: a retry must find the proof, not make a second one.
            const idempotencyKey =
              i % 5 === 4 && keysSent.length > 0
                ? keysSent[(i * 7919 + worker) % keysSent.length]!
                : `crash-${kill}-${worker}-${i}`;
            if (!keysSent.includes(idempotencyKey)) keysSent.push(idempotencyKey);
            const body = notarizeBody({
              idempotencyKey,
              label: `crash ${idempotencyKey}`,
              contentHash:
                'sha256:' + Buffer.from(idempotencyKey).toString('hex').padEnd(64, '0').slice(0, 64),
            });
            const answer = await postOnFreshConnection(
              `${instance.baseUrl}/api/proof/notarize`,
              JSON.stringify(body),
              {
                'x-service-key': key,
              },
            );
            if (answer?.status === 200) {
              const id = (JSON.parse(answer.body) as { proof: { id: string } }).proof.id;
              const earlier = acknowledged.get(idempotencyKey);
              assert.ok(earlier === undefined || earlier === id, `key ${idempotencyKey} answered two proofs`);
              acknowledged.set(idempotencyKey, id);
              if (acknowledged.size >= loadGoing.count) loadGoing.reached();
            } else if (answer === undefined) {
              return; // the process is gone
            }
          }
        });
        // Kill only once this round has load going (ten more proofs acknowledged), at a random moment.
        const going = Promise.withResolvers<void>();
        loadGoing = { count: acknowledged.size + 10, reached: going.resolve };
        await within(going.promise, { what: `round ${kill}: ten proofs acknowledged`, timeoutMs: 60_000 });
        // Part of the test: when in the load the kill lands.
        await randomMoment(Math.random() * 400);
        const seen = await latestCheckpoint(instance.baseUrl, verifier);
        await instance.stop('SIGKILL');
        isRunning = false;
        await Promise.all(workers);
        instance = await startInstance(env);
        // The restarted log carries on from the last tree the killed one signed: no fork, no loss.
        if (seen !== undefined) {
          seenBeforeKills.push(seen);
          const after = await latestCheckpoint(instance.baseUrl, verifier);
          assert.ok(after, 'the restarted log publishes a checkpoint');
          await assertConsistent(instance.baseUrl, seen, after);
        }
      }

      // Every acknowledged proof is there and verifies; no key maps to two proofs.
      for (const [idempotencyKey, id] of acknowledged) {
        const res = await api(instance.baseUrl, `/api/verify/proofs/${id}`);
        assert.equal(res.status, 200, id);
        assert.equal(res.body.verified, true, id);
        const search = await api(
          instance.baseUrl,
          `/api/proofs/search?idempotencyKey=${encodeURIComponent(idempotencyKey)}&accountId=${account.id}`,
        );
        assert.equal(search.body.proofs.length, 1, idempotencyKey);
      }
      assert.ok(acknowledged.size > KILLS * 10, `load was running (${acknowledged.size} proofs)`);

      // The log survived the kills: every acknowledged proof gets into it, and its inclusion proof leads
      // to the root of the latest signed checkpoint (the verify report checks both).
      for (const id of acknowledged.values()) {
        const report = await inclusionChecked(instance.baseUrl, id);
        const status = report.body.checks.inclusion.status as string;
        assert.notEqual(status, 'invalid', `${id}: ${report.body.checks.inclusion.message as string}`);
        assert.equal(status, 'valid', `${id} never entered the log`);
      }

      // Every checkpoint signed before a kill is a prefix of the final tree, which holds every proof.
      const final = await latestCheckpoint(instance.baseUrl, verifier);
      assert.ok(final && final.size >= acknowledged.size, `final tree of ${final?.size}`);
      assert.ok(
        seenBeforeKills.length >= KILLS - 1,
        `${seenBeforeKills.length} checkpoints seen before kills`,
      );
      for (const seen of seenBeforeKills) await assertConsistent(instance.baseUrl, seen, final);

      // Every acknowledged proof's event reaches the receiver, once the last instance has delivered them.
      const expected = new Set(acknowledged.values());
      // A delivery claimed by a killed instance is free again once its 20 s claim expires.
      const delivered = (received: typeof receiver.received) => new Set(received.map(deliveredProofId));
      await receiver.waitUntil((received) => [...expected].every((id) => delivered(received).has(id)), {
        what: 'every acknowledged proof has its proof.created event delivered',
        timeoutMs: 45_000,
      });
      const missing = [...expected].filter((id) => !delivered(receiver.received).has(id));
      assert.deepEqual(missing, [], 'every acknowledged proof has its proof.created event delivered');
      t.diagnostic(
        `${KILLS} kills, ${acknowledged.size} acknowledged proofs, ${keysSent.length} idempotency keys, ` +
          `${seenBeforeKills.length} checkpoints checked against the restarted log, final tree ${final.size}`,
      );
    } finally {
      await instance.stop('SIGKILL');
      await receiver.close();
    }
  },
);
