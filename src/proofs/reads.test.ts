import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api,
  expectError,
  loggedProof,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
  ignoringLog,
} from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';

let server: TestServer;
before(async () => (server = await startServer()));
after(async () => {
  await server.close();
  server.cleanup();
});

const create = async (overrides: Record<string, unknown> = {}) => {
  const res = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody(overrides) });
  assert.equal(res.status, 200, res.text);
  return res.body.proof;
};

describe('GET /api/proofs/{id}', () => {
  test('returns the public proof document, equal to what creation returned', async () => {
    const proof = await create({ metadata: { k: 'v' } });
    const res = await api(server.baseUrl, `/api/proofs/${proof.id}`, {
      headers: { origin: 'https://elsewhere.example' },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      { ...res.body, proof: ignoringLog(res.body.proof) },
      {
        ok: true,
        proof: ignoringLog(proof),
        links: { proof: `/proof/${proof.id}`, verify: `/api/verify/proofs/${proof.id}` },
      },
    );
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
  });

  test('an unknown or malformed id is 404 not_found', async () => {
    for (const id of [
      'proof_01ARZ3NDEKTSV4RRFFQ69G5FAV',
      'nope',
      'proof_%27%20or%201%3D1',
      '%00',
      'proof_%E2%82%AC',
    ]) {
      expectError(await api(server.baseUrl, `/api/proofs/${id}`), 404, 'not_found');
      expectError(await api(server.baseUrl, `/api/verify/proofs/${id}`), 404, 'not_found');
    }
  });
});

describe('GET /api/verify/proofs/{id}', () => {
  test('recomputes the signature and reports it valid', async () => {
    const proof = await create();
    const res = await api(server.baseUrl, `/api/verify/proofs/${proof.id}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    assert.equal(res.body.proofId, proof.id);
    assert.equal(res.body.verified, true);
    assert.equal(res.body.checks.signature.status, 'valid');
    assert.equal(res.body.checks.signature.algorithm, 'hmac-sha256');
    assert.equal(res.body.keyId, proof.keyId);
    assert.deepEqual(JSON.parse(res.body.signingMessage), {
      v: 1,
      id: proof.id,
      timestamp: proof.timestamp,
      contentHash: proof.contentHash,
      metadataHash: proof.metadataHash,
      label: proof.label,
    });
    assert.ok(Math.abs(Date.parse(res.body.checkedAt) - Date.now()) < 10_000);
  });

  test('a tampered stored signature or field is reported verified: false (200, not an error)', async () => {
    const a = await create();
    const b = await create();
    // Tamper with the stored rows directly, as someone with access to the database would.
    const { db } = server.ctx.database;
    const flipped = a.signature.slice(0, -1) + (a.signature.endsWith('0') ? '1' : '0');
    await db.updateTable('proofs').set({ signature: flipped }).where('id', '=', a.id).execute();
    await db.updateTable('proofs').set({ label: 'forged label' }).where('id', '=', b.id).execute();
    for (const id of [a.id, b.id]) {
      const res = await api(server.baseUrl, `/api/verify/proofs/${id}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.verified, false);
      assert.equal(res.body.checks.signature.status, 'invalid');
      const doc = await api(server.baseUrl, `/api/proofs/${id}`);
      assert.equal(doc.body.proof.verified, false);
    }
  });
});

describe('GET /api/proofs/recent', () => {
  test('lists newest first with signatures redacted and every other field intact', async () => {
    const created = [await create(), await create(), await create()];
    const res = await api(server.baseUrl, '/api/proofs/recent?limit=3');
    assert.equal(res.status, 200);
    assert.equal(res.body.limit, 3);
    assert.deepEqual(
      res.body.proofs.map((p: { id: string }) => p.id),
      created.map((p) => p.id).reverse(),
    );
    for (const [i, listed] of res.body.proofs.entries()) {
      assert.equal(listed.signature, '[redacted]');
      assert.deepEqual(
        ignoringLog({ ...listed, signature: 'x' }),
        ignoringLog({ ...created[2 - i], signature: 'x' }),
      );
    }
    assert.ok(!res.text.includes('hmac-sha256:'));
  });

  test('defaults to 20 and pages with a cursor without gaps or repeats', async () => {
    for (let i = 0; i < 25; i++) await create();
    const first = await api(server.baseUrl, '/api/proofs/recent');
    assert.equal(first.body.proofs.length, 20);
    assert.equal(first.body.limit, 20);
    const seen = new Set<string>();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: any = await api(
        server.baseUrl,
        `/api/proofs/recent?limit=7${cursor ? `&cursor=${cursor}` : ''}`,
      );
      assert.equal(res.status, 200);
      for (const p of res.body.proofs) {
        assert.ok(!seen.has(p.id), 'no repeats');
        seen.add(p.id);
      }
      cursor = res.body.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 100);
    const all = await api(server.baseUrl, '/api/proofs/search?limit=100');
    assert.equal(seen.size, all.body.proofs.length);
  });

  test('limit outside 1..100, a malformed cursor or an unknown parameter is 400', async () => {
    for (const query of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'cursor=%25%25',
      'cursor=czEyYWI',
      'sort=asc',
    ]) {
      expectError(await api(server.baseUrl, `/api/proofs/recent?${query}`), 400, 'invalid_request');
    }
  });
});

describe('GET /api/proofs/search', () => {
  test('a page holds each proof as its own document, whether the service already holds it in memory or not', async () => {
    const label = `mixed page ${Date.now()}`;
    const made = [await create({ label }), await create({ label }), await create({ label })];
    // Once in the log, a proof read by id is kept in memory; the other two are read from the store.
    const middle = await loggedProof(server.baseUrl, made[1]!.id);
    assert.notEqual(middle.log, null, 'the proof entered the log');
    // The newest one too (the next leaf), without reading it: the documents compared below are final.
    await eventually(
      async () => Number((await (await fetch(`${server.baseUrl}/log/checkpoint`)).text()).split('\n')[1]),
      { what: 'the log takes in the newest proof', until: (size) => size > middle.log.leafIndex + 1 },
    );
    const res = await api(server.baseUrl, `/api/proofs/search?q=${encodeURIComponent(label)}`);
    assert.equal(res.status, 200);
    const expected = await Promise.all(
      [...made]
        .reverse()
        .map(async (proof) => (await api(server.baseUrl, `/api/proofs/${proof.id}`)).body.proof),
    );
    assert.deepEqual(
      res.body.proofs,
      expected.map((proof) => ({ ...proof, signature: '[redacted]' })),
    );
  });

  test('finds by each parameter, combined with AND', async () => {
    const hash = sampleHash(424242);
    const target = await create({ contentHash: hash, label: 'Quarterly Report FINAL', metadata: { q: 3 } });
    const sameHash = await create({ contentHash: hash, label: 'other', metadata: { q: 4 } });
    const unrelated = await create({ contentHash: sampleHash(424243), label: 'unrelated' });
    const idsFor = async (query: string) => {
      const res = await api(server.baseUrl, `/api/proofs/search?${query}`);
      assert.equal(res.status, 200, res.text);
      for (const p of res.body.proofs) assert.equal(p.signature, '[redacted]');
      return res.body.proofs.map((p: { id: string }) => p.id);
    };
    assert.deepEqual(await idsFor(`contentHash=${hash}`), [sameHash.id, target.id]);
    assert.deepEqual(await idsFor(`contentHash=${hash.toUpperCase().replace('SHA256', 'sha256')}`), [
      sameHash.id,
      target.id,
    ]);
    assert.deepEqual(await idsFor(`metadataHash=${target.metadataHash}`), [target.id]);
    assert.deepEqual(await idsFor(`contentHash=${hash}&metadataHash=${target.metadataHash}`), [target.id]);
    assert.deepEqual(await idsFor(`idempotencyKey=no-such-key-${unrelated.id}`), []);
    assert.deepEqual(await idsFor(`q=${target.id}`), [target.id]);
    assert.deepEqual(await idsFor(`q=${hash}`), [sameHash.id, target.id]);
    assert.deepEqual(await idsFor(`q=${target.metadataHash}`), [target.id]);
    assert.deepEqual(await idsFor('q=report%20final'), [target.id]);
    assert.deepEqual(await idsFor('q=quarterly&contentHash=' + sampleHash(424243)), []);
    assert.deepEqual(await idsFor('accountId=acct_none'), []);
  });

  test('finds by idempotency key', async () => {
    const key = 'search-by-key-' + Date.now();
    const proof = await create({ idempotencyKey: key });
    const res = await api(server.baseUrl, `/api/proofs/search?idempotencyKey=${key}`);
    assert.deepEqual(
      res.body.proofs.map((p: { id: string }) => p.id),
      [proof.id],
    );
  });

  test('label search treats % and _ literally and ignores case beyond ASCII', async () => {
    const pct = await create({ label: '100% Ünïcode_label' });
    await create({ label: '100 percent unicode label' });
    const res = await api(server.baseUrl, `/api/proofs/search?q=${encodeURIComponent('0% üNÏCODE_')}`);
    assert.deepEqual(
      res.body.proofs.map((p: { id: string }) => p.id),
      [pct.id],
    );
  });

  test('glob and like metacharacters in q match only themselves', async () => {
    const star = await create({ label: 'odd*label?with[brackets] and 50%' });
    await create({ label: 'oddXlabelYwithZbrackets] and 50x' });
    for (const q of ['*label?with[', 'with[brackets]', '50%']) {
      const res = await api(server.baseUrl, `/api/proofs/search?q=${encodeURIComponent(q)}`);
      assert.deepEqual(
        res.body.proofs.map((p: { id: string }) => p.id),
        [star.id],
        q,
      );
    }
  });

  test('malformed parameters are 400 invalid_request', async () => {
    for (const query of [
      'contentHash=abc',
      'metadataHash=sha256:xyz',
      'limit=0',
      'limit=101',
      'q=',
      'unknown=1',
    ]) {
      const error = expectError(
        await api(server.baseUrl, `/api/proofs/search?${query}`),
        400,
        'invalid_request',
      );
      assert.equal(error.details.errors[0].location, 'querystring');
    }
  });
});

test('proofs survive a restart and still verify', async () => {
  const dataDir = (await import('../../test/helper.ts')).makeDataDir();
  const first = await startServer({ dataDir });
  const created = await api(first.baseUrl, '/api/proof/notarize', { body: notarizeBody() });
  await first.close();
  const second = await startServer({ dataDir });
  try {
    const read = await api(second.baseUrl, `/api/proofs/${created.body.proof.id}`);
    assert.deepEqual(ignoringLog(read.body.proof), ignoringLog(created.body.proof));
    const verify = await api(second.baseUrl, `/api/verify/proofs/${created.body.proof.id}`);
    assert.equal(verify.body.verified, true);
  } finally {
    await second.close();
    second.cleanup();
  }
});

test('label search has its trigram index on either engine', async () => {
  const { db } = server.ctx.database;
  const { sql } = await import('kysely');
  if (server.ctx.database.engine === 'postgres') {
    const { rows } = await sql<{
      indexname: string;
    }>`select indexname from pg_indexes where tablename = 'proofs' and indexname = 'proofs_label_trgm' and schemaname = current_schema()`.execute(
      db,
    );
    assert.equal(rows.length, 1, 'the pg_trgm index exists');
  } else {
    const { rows } = await sql<{
      name: string;
    }>`select name from sqlite_master where name = 'proofs_label_fts'`.execute(db);
    assert.equal(rows.length, 1, 'the FTS5 table exists');
  }
});
