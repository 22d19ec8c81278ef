import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { metadataHash } from '../core/hashing.ts';
import { up as countsMigration } from '../db/migrations/0008-proof-counts.ts';
import { AppError } from '../errors.ts';
import {
  api,
  type ApiResponse,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';

/** Every window looks at 4 sequence numbers, and a page stops after its first window. */
const WINDOW_ROWS = 4;
const PROOF_COUNT = 30;

let server: TestServer;
/** The ids of the created proofs, oldest first, with what each was made with. */
const made: { id: string; label: string; contentHash: string; metadata: Record<string, unknown> }[] = [];

before(async () => {
  server = await startServer({ search: { windowRows: WINDOW_ROWS, budgetMs: 0 } });
  for (let n = 0; n < PROOF_COUNT; n++) {
    // Two labels hold "zq" (too short for the trigram index); every fifth proof shares a content hash,
    // and of those, every other one has the same metadata.
    const label = n === 3 || n === 17 ? `release zq ${n}` : `release ${n}`;
    const contentHash = n % 5 === 0 ? sampleHash(500) : sampleHash(600 + n);
    const metadata = { group: n % 10 === 0 ? 'a' : 'b' };
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody({ label, contentHash, metadata, idempotencyKey: `bounds-${n}` }),
    });
    assert.equal(res.status, 200, res.text);
    made.push({ id: res.body.proof.id, label, contentHash, metadata });
  }
});
after(async () => {
  await server.close();
  server.cleanup();
});

/** Follows nextCursor to the end; returns every proof id found and the pages it took. */
async function searchAll(query: string): Promise<{ ids: string[]; pages: number; shortPages: number }> {
  const ids: string[] = [];
  let pages = 0;
  let shortPages = 0;
  let cursor: string | null = null;
  do {
    const res: ApiResponse = await api(
      server.baseUrl,
      `/api/proofs/search?${query}&limit=5${cursor === null ? '' : `&cursor=${cursor}`}`,
    );
    assert.equal(res.status, 200, res.text);
    pages++;
    const page = res.body.proofs as { id: string; signature: string }[];
    assert.ok(page.length <= 5);
    for (const proof of page) assert.equal(proof.signature, '[redacted]');
    cursor = res.body.nextCursor as string | null;
    if (page.length < 5 && cursor !== null) shortPages++;
    ids.push(...page.map((proof) => proof.id));
    assert.ok(pages <= PROOF_COUNT + 2, 'the cursor moves on every page');
  } while (cursor !== null);
  return { ids, pages, shortPages };
}

const newestFirst = (rows: typeof made) => rows.map((row) => row.id).reverse();

describe('searches that could look at every proof are answered in bounded steps', () => {
  test('text too short for the index: each page looks at one window, and following nextCursor finds every match', async () => {
    const { ids, pages, shortPages } = await searchAll('q=zq');
    assert.deepEqual(ids, newestFirst(made.filter((row) => row.label.includes('zq'))));
    // 30 proofs, 4 a window, one window a page: the search had to take at least 8 steps.
    assert.ok(pages >= Math.ceil(PROOF_COUNT / WINDOW_ROWS), `${pages} pages`);
    assert.ok(shortPages > 0, 'pages cut short by the budget still carry a cursor');
  });

  test('two filters at once: the same matches as filtering the proofs one by one', async () => {
    const contentHash = sampleHash(500);
    const { ids } = await searchAll(
      `contentHash=${contentHash}&metadataHash=${encodeURIComponent(metadataHash({ group: 'a' }))}`,
    );
    const expected = made.filter((row) => row.contentHash === contentHash && row.metadata.group === 'a');
    assert.equal(expected.length, 3);
    assert.deepEqual(ids, newestFirst(expected));
  });

  test('text of three characters or more finds every match; on SQLite a full page at a time from the index', async () => {
    const { ids, shortPages } = await searchAll('q=release');
    assert.deepEqual(ids, newestFirst(made));
    // PostgreSQL searches labels by window like short text; SQLite's trigram index stops at the page.
    if (server.ctx.config.database.engine === 'sqlite')
      assert.equal(shortPages, 0, 'every page but the last is full');
  });

  test('one search runs at a time; beyond the waiting room, 503 service_unavailable with Retry-After', async () => {
    const crowded = await startServer({ search: { windowRows: WINDOW_ROWS, budgetMs: 1000, maxWaiting: 0 } });
    try {
      for (let n = 0; n < 3 * WINDOW_ROWS; n++) {
        const res = await api(crowded.baseUrl, '/api/proof/notarize', {
          body: notarizeBody({ label: `item ${n}`, idempotencyKey: `crowd-${n}` }),
        });
        assert.equal(res.status, 200);
      }
      // Both start in the same turn of the event loop: the first takes the gate, the second finds it busy.
      const running = crowded.ctx.proofs.list({ q: 'zq' }, 5, undefined);
      const refused = crowded.ctx.proofs.list({ q: 'qz' }, 5, undefined);
      const error = await refused.then(
        () => assert.fail('the second search was not refused'),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof AppError);
      assert.equal(error.code, 'service_unavailable');
      assert.equal(error.headers['Retry-After'], '1');
      assert.deepEqual((await running).proofs, []);
      // The gate is free again: the next search runs.
      assert.equal((await crowded.ctx.proofs.list({ q: 'item 1' }, 50, undefined)).proofs.length, 3);
    } finally {
      await crowded.close();
      crowded.cleanup();
    }
  });
});

describe('counts of proofs', () => {
  test('are kept per day as proofs are made, and rebuilt from the proofs by the migration', async () => {
    const summary = async () => (await api(server.baseUrl, '/api/dashboard/summary')).body.proofs;
    const before = await summary();
    assert.equal(before.total, PROOF_COUNT);
    assert.equal(before.byCreatedVia.demo, PROOF_COUNT);
    const { db } = server.ctx.database;
    await sql`drop table proof_counts`.execute(db);
    await countsMigration(db as never, { engine: server.ctx.config.database.engine });
    assert.deepEqual(await summary(), before);
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      body: notarizeBody({ idempotencyKey: 'one-more' }),
    });
    assert.equal(res.status, 200);
    const afterOne = await summary();
    assert.equal(afterOne.total, PROOF_COUNT + 1);
    assert.equal(afterOne.today, before.today + 1);
    assert.equal(afterOne.latestAt, res.body.proof.timestamp);
  });
});
