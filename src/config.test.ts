import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ConfigError, loadConfig } from './config.ts';
import { generateCosignerKey } from './core/cosignature.ts';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

test('no variables at all: the embedded default in demo mode on 127.0.0.1:8080', () => {
  const config = loadConfig({});
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.port, 8080);
  assert.deepEqual(config.database, { engine: 'sqlite', path: path.resolve('data/hashproof.db') });
  assert.equal(config.paymentMode, 'demo');
  assert.equal(config.publicBaseUrl, 'http://127.0.0.1:8080');
  assert.deepEqual(config.rateLimit, { max: 60, windowMs: 60000 });
  assert.equal(config.requestTimeoutMs, 30_000);
  assert.equal(config.signingKeysDir, path.resolve('data/keys'));
  assert.equal(config.logStateDir, path.resolve('data/keys'), 'the log state beside the keys');
  assert.equal(config.adminKey, undefined);
  assert.equal(config.webhookAllowPrivateUrls, false);
  assert.deepEqual(config.anchors, {
    tsaUrls: [],
    otsCalendars: [],
    intervalMs: 60_000,
    allowPrivateUrls: false,
    bitcoinHeadersUrl: undefined,
  });
  assert.deepEqual(config.witnesses, { witnesses: [], intervalMs: 1_000, allowPrivateUrls: false });
  assert.ok(Object.isFrozen(config));
});

test('anchor lists: comma-separated URLs, trailing slashes and repeats dropped', () => {
  const { anchors } = loadConfig({
    ANCHOR_TSA_URLS: ' http://timestamp.digicert.com , https://freetsa.org/tsr,http://timestamp.digicert.com',
    ANCHOR_OTS_CALENDARS: 'https://alice.btc.calendar.opentimestamps.org/,',
    ANCHOR_INTERVAL_MS: '15000',
    ANCHOR_ALLOW_PRIVATE_URLS: 'true',
    BITCOIN_HEADERS_URL: 'https://blockstream.info/api/',
  });
  assert.deepEqual(anchors, {
    tsaUrls: ['http://timestamp.digicert.com', 'https://freetsa.org/tsr'],
    otsCalendars: ['https://alice.btc.calendar.opentimestamps.org'],
    intervalMs: 15_000,
    allowPrivateUrls: true,
    bitcoinHeadersUrl: 'https://blockstream.info/api',
  });
});

test('witnesses: <verifier key>@<url>, a key name may hold "@", a URL its credentials', () => {
  const a = generateCosignerKey('witness.example/a');
  const b = generateCosignerKey('ops@witness.example');
  const { witnesses } = loadConfig({
    WITNESSES: ` ${a.vkey}@https://w.example/prefix/ ,${b.vkey}@http://user:pw@10.0.0.1:8090,`,
    WITNESS_INTERVAL_MS: '250',
    WITNESS_ALLOW_PRIVATE_URLS: 'true',
  });
  assert.deepEqual(witnesses, {
    witnesses: [
      { vkey: a.vkey, url: 'https://w.example/prefix' },
      { vkey: b.vkey, url: 'http://user:pw@10.0.0.1:8090' },
    ],
    intervalMs: 250,
    allowPrivateUrls: true,
  });
  const ml = a.vkey.replace(/\+[^+]*$/, '+BgAA');
  const bad = (value: string) => problemsOf({ WITNESSES: value });
  for (const value of [
    'https://w.example',
    `${a.vkey}`,
    `${a.vkey}@ftp://w.example`,
    `${a.vkey.slice(0, -4)}AAAA@https://w.example`,
    `${ml}@https://w.example`,
    `${a.vkey}@https://a.example,${a.vkey}@https://b.example`,
    `${a.vkey}@https://[::1`,
  ]) {
    const problems = bad(value);
    assert.equal(problems.length, 1, `${value}: ${problems.join(' | ')}`);
    assert.match(problems[0] ?? '', /^WITNESSES: /);
  }
  assert.doesNotMatch(bad(`${a.vkey}@https://user:secret@[::1`)[0] ?? '', /secret/, 'no credentials shown');
});

test('variables are read as documented', () => {
  const config = loadConfig({
    HOST: '0.0.0.0',
    PORT: '9000',
    DATABASE_URL: 'sqlite:/tmp/x/db.sqlite',
    PUBLIC_BASE_URL: 'https://proofs.example.com/',
    RATE_LIMIT_MAX: '0',
    SIGNING_KEYS_DIR: '/tmp/keys',
    TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    REQUEST_TIMEOUT_MS: '2500',
  });
  assert.equal(config.port, 9000);
  assert.equal(config.requestTimeoutMs, 2500);
  assert.deepEqual(config.database, { engine: 'sqlite', path: '/tmp/x/db.sqlite' });
  assert.equal(config.publicBaseUrl, 'https://proofs.example.com');
  assert.equal(config.rateLimit.max, 0);
  assert.equal(config.signingKeysDir, '/tmp/keys');
  assert.equal(config.logStateDir, '/tmp/keys');
  assert.equal(
    loadConfig({ SIGNING_KEYS_DIR: '/ro/keys', LOG_STATE_DIR: 'state' }).logStateDir,
    path.resolve('state'),
  );
  assert.deepEqual(config.trustProxy, ['10.0.0.0/8', '127.0.0.1']);
  assert.equal(config.webhookAllowPrivateUrls, true);
  assert.deepEqual(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).database, {
    engine: 'postgres',
    url: 'postgres://u@h/db',
  });
});

test('each bad variable gets one line naming it', () => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'PORT:'],
    [{ PORT: '70000' }, 'PORT:'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL:'],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL:'],
    [{ PAYMENT_MODE: 'free' }, 'PAYMENT_MODE:'],
    [{ RATE_LIMIT_MAX: '-1' }, 'RATE_LIMIT_MAX:'],
    [{ RATE_LIMIT_WINDOW_MS: '0' }, 'RATE_LIMIT_WINDOW_MS:'],
    [{ REQUEST_TIMEOUT_MS: '50' }, 'REQUEST_TIMEOUT_MS:'],
    [{ TRUST_PROXY: '2' }, 'TRUST_PROXY:'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL:'],
    [{ WEBHOOK_ALLOW_PRIVATE_URLS: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE_URLS:'],
    [{ ANCHOR_TSA_URLS: 'timestamp.digicert.com' }, 'ANCHOR_TSA_URLS:'],
    [{ ANCHOR_OTS_CALENDARS: 'https://a.example,ftp://b.example' }, 'ANCHOR_OTS_CALENDARS:'],
    [{ ANCHOR_INTERVAL_MS: '5' }, 'ANCHOR_INTERVAL_MS:'],
    [{ ANCHOR_ALLOW_PRIVATE_URLS: 'yes' }, 'ANCHOR_ALLOW_PRIVATE_URLS:'],
    [{ WITNESSES: 'nobody@https://w.example' }, 'WITNESSES:'],
    [{ WITNESS_INTERVAL_MS: 'soon' }, 'WITNESS_INTERVAL_MS:'],
    [{ WITNESS_ALLOW_PRIVATE_URLS: 'maybe' }, 'WITNESS_ALLOW_PRIVATE_URLS:'],
    [{ BITCOIN_HEADERS_URL: 'https://a.example,https://b.example' }, 'BITCOIN_HEADERS_URL:'],
    [{ SERVICE_ADMIN_KEY: 'short' }, 'SERVICE_ADMIN_KEY:'],
    [{ REDIS_URL: 'localhost:6379' }, 'REDIS_URL:'],
  ];
  for (const [env, prefix] of cases) {
    const problems = problemsOf(env);
    assert.equal(problems.length, 1, `${JSON.stringify(env)}: ${problems.join(' | ')}`);
    assert.ok(problems[0]?.startsWith(prefix), problems[0]);
  }
  assert.equal(problemsOf({ PORT: 'x', LOG_LEVEL: 'y' }).length, 2, 'all problems at once');
});

test('x402 mode refuses to start without a pay-to address and a facilitator', () => {
  const problems = problemsOf({ PAYMENT_MODE: 'x402' });
  assert.deepEqual(
    problems.map((p) => p.split(':')[0]),
    ['X402_PAY_TO', 'X402_FACILITATOR_URL'],
  );
  assert.deepEqual(
    problemsOf({ PAYMENT_MODE: 'x402', X402_PAY_TO: '0x123', X402_FACILITATOR_URL: 'https://f.example' })
      .length,
    1,
  );
  const config = loadConfig({
    PAYMENT_MODE: 'x402',
    X402_PAY_TO: '0x' + 'a'.repeat(40),
    X402_FACILITATOR_URL: 'https://facilitator.example/x402',
  });
  assert.deepEqual(config.x402, {
    payTo: '0x' + 'a'.repeat(40),
    facilitatorUrl: 'https://facilitator.example/x402',
    network: 'eip155:8453',
    price: '$0.005',
    facilitatorTimeoutMs: 30_000,
    cdpApiKey: undefined,
  });
  // A CDP API key alone names Coinbase's facilitator; half a key is refused.
  const cdp = loadConfig({
    PAYMENT_MODE: 'x402',
    X402_PAY_TO: '0x' + 'a'.repeat(40),
    CDP_API_KEY_ID: 'key-id',
    CDP_API_KEY_SECRET: 'c2VjcmV0',
  });
  assert.equal(cdp.x402?.facilitatorUrl, 'https://api.cdp.coinbase.com/platform/v2/x402');
  assert.deepEqual(cdp.x402?.cdpApiKey, { id: 'key-id', secret: 'c2VjcmV0' });
  assert.throws(
    () => loadConfig({ PAYMENT_MODE: 'x402', X402_PAY_TO: '0x' + 'a'.repeat(40), CDP_API_KEY_ID: 'key-id' }),
    (error: ConfigError) =>
      error.problems.some((line) => line.startsWith('CDP_API_KEY_ID / CDP_API_KEY_SECRET')),
  );
});
