import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  api,
  expectError,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';

let server: TestServer;
before(
  async () => (server = await startServer({ env: { RATE_LIMIT_MAX: '60', RATE_LIMIT_WINDOW_MS: '600000' } })),
);
after(async () => {
  await server.close();
  server.cleanup();
});

const run = `rl-${process.pid}-${Date.now()}`;
const items = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) =>
    notarizeBody({ contentHash: sampleHash(from + i), idempotencyKey: `${run}-${from + i}` }),
  );
const batch = (body: unknown[]) => api(server.baseUrl, '/api/proof/batch', { body: { items: body } });
const remaining = (res: { headers: Headers }) =>
  Number(/;r=(\d+);/.exec(res.headers.get('ratelimit') ?? '')?.[1] ?? NaN);

test('a batch counts one request per started hundred items, and a batch heavier than what remains is refused whole', async () => {
  const one = await batch(items(0, 1));
  assert.equal(one.status, 200, one.text);
  assert.equal(remaining(one), 59);
  const hundred = await batch(items(10, 100));
  assert.equal(remaining(hundred), 58, 'exactly 100 items count as one');
  const more = await batch(items(200, 250));
  assert.equal(more.status, 200, more.text);
  assert.equal(remaining(more), 55, '250 items count as three');
  const full = await batch(items(1_000, 1_000));
  assert.equal(full.status, 200, full.text);
  assert.equal(remaining(full), 45, '1,000 items count as ten');
  // Down to 5 left: a batch that counts 6 is refused whole, and none of its items is made.
  for (let i = 0; i < 40; i++) await api(server.baseUrl, '/api/proofs/recent');
  const heavy = items(5_000, 600);
  const refused = await batch(heavy);
  const error = expectError(refused, 429, 'rate_limited');
  assert.equal(error.details.weight, 6);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  const key = heavy[0]!.idempotencyKey as string;
  const found = await api(server.baseUrl, `/api/proofs/search?idempotencyKey=${encodeURIComponent(key)}`);
  assert.equal(found.status, 200);
  assert.deepEqual(found.body.proofs, []);
  // The refused batch counted once, as any refused request does, and the search once: 3 are left, which
  // still serve a batch that fits.
  assert.equal(remaining(found), 3);
  const fits = await batch(items(6_000, 300));
  assert.equal(fits.status, 200, fits.text);
  assert.equal(remaining(fits), 0);
});
