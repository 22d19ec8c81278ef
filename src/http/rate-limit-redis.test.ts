import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { api, expectError, notarizeBody, REDIS_URL, requireService, startServer } from '../../test/helper.ts';

const skip = await requireService('Redis', REDIS_URL);

test(
  'with REDIS_URL the limit holds across instances: 61 requests over two servers, exactly one 429',
  { skip },
  async () => {
    const nameSpace = `hashproof-test-${randomUUID()}:`;
    const env = {
      RATE_LIMIT_MAX: '60',
      RATE_LIMIT_WINDOW_MS: '60000',
      REDIS_URL,
      REDIS_KEY_PREFIX: nameSpace,
    };
    const a = await startServer({ env });
    const b = await startServer({ env });
    try {
      const responses = [];
      for (let i = 0; i < 61; i++) responses.push(await api((i % 2 ? a : b).baseUrl, '/api/proofs/recent'));
      const limited = responses.filter((r) => r.status === 429);
      assert.equal(limited.length, 1);
      assert.equal(responses.at(-1)?.status, 429);
      expectError(limited[0]!, 429, 'rate_limited');
      assert.equal(responses.filter((r) => r.status === 200).length, 60);
    } finally {
      await a.close();
      await b.close();
      a.cleanup();
      b.cleanup();
    }
  },
);

test(
  'with REDIS_URL a concurrent burst over two servers lets exactly the limit through',
  { skip },
  async () => {
    const env = {
      RATE_LIMIT_MAX: '20',
      RATE_LIMIT_WINDOW_MS: '60000',
      REDIS_URL,
      REDIS_KEY_PREFIX: `hashproof-test-${randomUUID()}:`,
    };
    const a = await startServer({ env });
    const b = await startServer({ env });
    try {
      const responses = await Promise.all(
        Array.from({ length: 100 }, (_, i) => api((i % 2 ? a : b).baseUrl, '/api/proofs/recent')),
      );
      assert.equal(responses.filter((r) => r.status === 200).length, 20);
      const limited = responses.filter((r) => r.status === 429);
      assert.equal(limited.length, 80);
      for (const res of limited) {
        expectError(res, 429, 'rate_limited');
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
      }
    } finally {
      await a.close();
      await b.close();
      a.cleanup();
      b.cleanup();
    }
  },
);

test(
  'with REDIS_URL a batch weighs the same on every instance: 250 items count 3 in the shared window',
  { skip },
  async () => {
    const env = {
      RATE_LIMIT_MAX: '10',
      RATE_LIMIT_WINDOW_MS: '600000',
      REDIS_URL,
      REDIS_KEY_PREFIX: `hashproof-test-${randomUUID()}:`,
    };
    const a = await startServer({ env });
    const b = await startServer({ env });
    const items = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        notarizeBody({ idempotencyKey: `redis-batch-${randomUUID()}-${i}` }),
      );
    try {
      const first = await api(a.baseUrl, '/api/proof/batch', { body: { items: items(250) } });
      assert.equal(first.status, 200, first.text);
      assert.match(first.headers.get('ratelimit') ?? '', /;r=7;/);
      const second = await api(b.baseUrl, '/api/proof/batch', { body: { items: items(250) } });
      assert.match(second.headers.get('ratelimit') ?? '', /;r=4;/, 'the other instance counts on');
      // 4 left: a batch of 500 (weight 5) is refused whole on either instance.
      const heavy = await api(a.baseUrl, '/api/proof/batch', { body: { items: items(500) } });
      assert.equal(expectError(heavy, 429, 'rate_limited').details.weight, 5);
    } finally {
      await a.close();
      await b.close();
      a.cleanup();
      b.cleanup();
    }
  },
);
