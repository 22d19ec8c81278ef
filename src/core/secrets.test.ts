import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import {
  generateApiKey,
  generateWebhookSecret,
  hashApiKey,
  looksLikeApiKey,
  randomBase62,
  secretsEqual,
} from './secrets.ts';
import { signWebhook } from './standard-webhooks.ts';
import { recordTimingSafeEqual } from '../../test/timing-safe-spy.ts';

test('API keys have the documented format, a prefix of 11 characters and a SHA-256 hash', () => {
  const key = generateApiKey();
  assert.match(key.raw, /^hp_[0-9A-Za-z]{43}$/);
  assert.ok(looksLikeApiKey(key.raw));
  assert.equal(key.prefix, key.raw.slice(0, 11));
  assert.equal(key.hash, hashApiKey(key.raw));
  assert.match(key.hash, /^[0-9a-f]{64}$/);
  assert.notEqual(generateApiKey().raw, key.raw);
});

test('base62 output covers the alphabet with no visible bias', () => {
  const counts = new Map<string, number>();
  for (const c of randomBase62(62_000)) counts.set(c, (counts.get(c) ?? 0) + 1);
  assert.equal(counts.size, 62);
  for (const n of counts.values()) assert.ok(n > 800 && n < 1200, `count ${n}`);
});

test('secretsEqual is true only for the same secret, whatever the lengths', () => {
  assert.equal(secretsEqual('admin-key-0123456789', 'admin-key-0123456789'), true);
  assert.equal(secretsEqual('admin-key-0123456788', 'admin-key-0123456789'), false);
  assert.equal(secretsEqual('', 'admin-key-0123456789'), false);
  assert.equal(secretsEqual('admin-key-0123456789-longer', 'admin-key-0123456789'), false);
});

test('secretsEqual compares two 32-byte digests with timingSafeEqual, whatever the inputs', async () => {
  const expected = 'admin-key-0123456789';
  for (const [given, isEqual] of [
    [expected, true],
    ['admin-key-0123456788', false],
    ['', false],
    ['a', false],
    [expected + 'x'.repeat(10_000), false],
    ['é'.repeat(20), false],
  ] as const) {
    const { result, calls } = await recordTimingSafeEqual(() => secretsEqual(given, expected));
    assert.equal(result, isEqual, given.slice(0, 30));
    assert.deepEqual(calls, [[32, 32]], `one fixed-length comparison for ${given.length} characters`);
  }
});

test('webhook signatures match the standardwebhooks package byte for byte', () => {
  const secret = generateWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  const id = 'evt_01JD0000000000000000000000';
  const timestamp = 1_795_000_000;
  const body = JSON.stringify({ type: 'webhook.test', data: { n: 1, text: 'é' } });
  const ours = signWebhook(secret, id, timestamp, body);
  const theirs = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
  assert.equal(ours, theirs);
  const verified = new Webhook(secret).verify(body, {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': signWebhook(secret, id, Math.floor(Date.now() / 1000), body),
  });
  assert.deepEqual(verified, JSON.parse(body));
});
