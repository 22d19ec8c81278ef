import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { ADMIN_KEY, adminHeaders, api, notarizeBody, startServer, type ApiResponse } from '../test/helper.ts';
import { signingKeyMaterial } from '../test/key-material.ts';
import { rawRequest, requestParts } from '../test/raw-http.ts';
import { eventually } from '../test/wait.ts';
import { startWebhookReceiver } from '../test/webhook-receiver.ts';

const RAW_METADATA = `raw-metadata-value-${randomUUID()}`;

/** Every form a secret could take in a log line: as text, JSON-escaped, as bytes (hex, base64, a list). */
function encodings(secret: string): string[] {
  const bytes = Buffer.from(secret);
  return [
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    bytes.toString('hex'),
    bytes.toString('base64').replace(/=+$/, ''),
    bytes.toString('base64url'),
    [...bytes].join(','),
  ];
}

test('no secret appears in any response after its creation, in any log line or in any error', async () => {
  const receiver = await startWebhookReceiver();
  const server = await startServer({
    env: {
      SERVICE_ADMIN_KEY: ADMIN_KEY,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      LOG_LEVEL: 'trace',
      // Every documented GET answers, security.txt included.
      SECURITY_CONTACT: 'mailto:security@proofs.example.com',
    },
    webhookRetryScheduleMs: [100, 100],
    webhookPollIntervalMs: 50,
  });
  const answers: { what: string; res: ApiResponse }[] = [];
  const call = async (what: string, init: Parameters<typeof api>[2] = {}) => {
    const res = await api(server.baseUrl, what, init);
    answers.push({ what: `${init.method ?? (init.body ? 'POST' : 'GET')} ${what}`, res });
    return res;
  };
  const admin = (what: string, body?: unknown) =>
    call(what, { method: body === undefined ? 'GET' : 'POST', body, headers: adminHeaders });
  try {
    // The secrets, each from the one answer allowed to show it (not kept for the search).
    const account = (await admin('/api/accounts', { name: 'leaks' })).body.account;
    const created = await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, {
      body: {},
      headers: adminHeaders,
    });
    const apiKey = created.body.key as string;
    const revoked = await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, {
      body: {},
      headers: adminHeaders,
    });
    const hook = await api(server.baseUrl, `/api/accounts/${account.id}/webhooks`, {
      body: { url: receiver.url },
      headers: adminHeaders,
    });
    const webhookSecret = hook.body.secret as string;
    receiver.setSecret(webhookSecret);

    // Everything a client can do: proofs with the key (each sends a signed event), reads, admin listings.
    await admin(`/api/api-keys/${revoked.body.apiKey.id}/revoke`, {});
    const proof = (
      await call('/api/proof/notarize', {
        body: notarizeBody({ metadata: { note: RAW_METADATA } }),
        headers: { 'x-service-key': apiKey },
      })
    ).body.proof;
    await call('/api/proof/notarize', { body: notarizeBody(), headers: { 'x-service-key': apiKey } });
    await admin(`/api/webhooks/${hook.body.webhook.id}/test`, {});
    await receiver.waitFor(3);
    await eventually(() => call(`/api/proofs/${proof.id}/inclusion`), {
      what: 'the proof enters the log',
      until: (inclusion) => inclusion.status === 200,
    });
    const doc = (await call('/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const size = Number((await call('/log/checkpoint')).text.split('\n')[1]);
    const ids: [string, string][] = [
      ['/api/accounts/', account.id],
      ['/api/api-keys/', created.body.apiKey.id],
      ['/api/webhooks/', hook.body.webhook.id],
      ['', proof.id],
    ];
    for (const [template, methods] of Object.entries(doc.paths)) {
      // The MCP endpoint's GET is a session's event stream: it needs a session (src/proofs/mcp-http.test.ts).
      if (!('get' in methods) || template === '/mcp') continue;
      const id = ids.find(([prefix]) => template.startsWith(prefix))?.[1] ?? proof.id;
      const concrete = template
        .replace('{id}', id)
        .replace('{*}', `0/000.p/${size}`)
        .replace('/api/log/consistency', `/api/log/consistency?from=1&to=${size}`)
        .replace('/api/proofs/search', `/api/proofs/search?q=${proof.id}`);
      const isAdmin = server.app.adminRoutes.covers(template);
      const res = await call(concrete, isAdmin ? { headers: adminHeaders } : {});
      // This service anchors nothing: a proof's anchors answer 409 not_yet_anchored, in the envelope.
      const isUnanchored = res.status === 409 && res.body?.error?.code === 'not_yet_anchored';
      // Nor has it witnesses: no checkpoint is cosigned (404 in the envelope).
      const isUncosigned =
        concrete === '/api/log/cosigned-checkpoint' && res.body?.error?.code === 'not_found';
      assert.ok(res.status < 400 || isUnanchored || isUncosigned, `${concrete}: ${res.status}`);
    }
    await call(`/log/tile/entries/000.p/${size}`);
    await call(`/api/accounts/${account.id}/webhooks`, { headers: adminHeaders });

    // Wrong credentials: refused, and never echoed back.
    const wrong = [
      `wrong-admin-key-${randomUUID()}`,
      `${ADMIN_KEY}x`,
      `hp_${'Z'.repeat(43)}`,
      `hp_short-${randomUUID()}`,
      revoked.body.key as string,
    ];
    for (const sent of wrong) {
      for (const res of [
        await call('/api/accounts', { headers: { 'x-service-admin-key': sent } }),
        await call('/api/proof/notarize', { body: notarizeBody(), headers: { 'x-service-key': sent } }),
      ]) {
        assert.equal(res.status, 401, res.text);
        assert.ok(!res.text.includes(sent), `the 401 echoes ${sent}`);
      }
    }

    await server.close();
    const material = signingKeyMaterial(path.join(server.dataDir, 'keys'));
    // HMAC, receipt, log, TSA and TSA root keys: a search that found none would prove nothing.
    assert.ok(material.keys >= 5, `${material.keys} signing keys found`);
    const signatures = receiver.received.map((r) => String(r.headers['webhook-signature']));
    assert.equal(signatures.length, 3);
    const secrets: [string, string[]][] = [
      ['admin key', [ADMIN_KEY]],
      ['API key', [apiKey, revoked.body.key as string]],
      ['webhook secret', [webhookSecret, webhookSecret.slice('whsec_'.length)]],
      ['webhook signature', signatures.flatMap((s) => [s, s.slice('v1,'.length)])],
      ['signing key', material.forms],
      ['raw metadata', [RAW_METADATA]],
      ['wrong key sent', wrong],
    ];
    assert.ok(answers.length > 60, `${answers.length} answers searched`);
    const logs = server.logs.join('\n');
    assert.ok(logs.includes('/api/proof/notarize'), 'requests are logged');
    for (const [name, values] of secrets) {
      for (const value of values) {
        for (const { what, res } of answers) {
          const headers = [...res.headers.values()].join('\n');
          assert.ok(
            !res.text.includes(value) && !headers.includes(value),
            `${name} in the answer to ${what}`,
          );
        }
        for (const form of encodings(value)) assert.ok(!logs.includes(form), `${name} in the logs`);
      }
    }
    // The webhook deliveries carry no raw metadata either.
    assert.ok(receiver.received.every((r) => !r.body.includes(RAW_METADATA)));
  } finally {
    await server.close();
    server.cleanup();
    await receiver.close();
  }
});

test("requests Node's parser refuses leave no credential they carried in any log line", async () => {
  const server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, LOG_LEVEL: 'trace' } });
  try {
    const account = (await api(server.baseUrl, '/api/accounts', { body: {}, headers: adminHeaders })).body
      .account;
    const apiKey = (
      await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, { body: {}, headers: adminHeaders })
    ).body.key as string;
    const bearer = `bearer-${randomUUID()}`;
    const payment = Buffer.from(`payment-${randomUUID()}`).toString('base64');
    const cookie = `cookie-${randomUUID()}`;
    const credentials: [string, string][] = [
      ['X-Service-Admin-Key', ADMIN_KEY],
      ['X-Service-Key', apiKey],
      ['Authorization', `Bearer ${bearer}`],
      ['PAYMENT-SIGNATURE', payment],
      ['Cookie', `session=${cookie}`],
    ];
    const lines = credentials.map(([name, value]) => `${name}: ${value}\r\n`).join('');
    const head = (requestLine: string, ...extra: string[]) =>
      Buffer.from(
        `${requestLine}\r\nHost: 127.0.0.1\r\n${extra.join('')}${lines}Connection: close\r\n\r\n`,
        'latin1',
      );
    const malformed: [string, Buffer[]][] = [
      [
        'a NUL in a header after them',
        requestParts('GET', '/health', { headers: [...credentials, ['X-Note', Buffer.from('a\0b')]] }),
      ],
      ['a NUL in a header before them', [head('GET /health HTTP/1.1', 'X-Note: a\0b\r\n')]],
      ['a header line without a colon', [head('GET /health HTTP/1.1', 'this line has no colon\r\n')]],
      [
        'a space in a header name',
        requestParts('GET', '/health', { headers: [...credentials, ['Bad Name', 'x']] }),
      ],
      [
        'a Content-Length that is no number',
        [head('POST /api/proof/notarize HTTP/1.1', 'Content-Length: abc\r\n')],
      ],
      [
        'headers over 16 KiB',
        requestParts('GET', '/health', { headers: [...credentials, ['X-Padding', 'p'.repeat(20_000)]] }),
      ],
      ['a NUL in the request line', [head('GET /he\0alth HTTP/1.1')]],
      [
        'a chunked body that is not',
        [
          Buffer.concat([
            head(
              'POST /api/proof/notarize HTTP/1.1',
              'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n',
            ),
            Buffer.from('zz\r\n{}\r\n0\r\n\r\n'),
          ]),
        ],
      ],
    ];
    for (const [what, parts] of malformed) {
      const res = await rawRequest(server.baseUrl, parts);
      assert.ok(res.status === 400 || res.status === 431, `${what}: ${res.status} ${res.text}`);
      for (const [, value] of credentials) assert.ok(!res.text.includes(value), `${what}: echoed`);
    }
    // Each refusal is logged (at debug): the search below has lines to search.
    const clientError = (line: string) => line.includes('"msg":"client error"');
    await server.logged(
      (lines) => lines.filter(clientError).length >= malformed.length,
      `${malformed.length} refusals logged`,
    );
    await server.close();
    const logs = server.logs.join('\n');
    assert.match(logs, /"code":"HPE_[A-Z_]+"/, 'the logged errors keep their code');
    const secrets: [string, string][] = [
      ['admin key', ADMIN_KEY],
      ['API key', apiKey],
      ['bearer token', bearer],
      ['payment signature', payment],
      ['cookie', cookie],
    ];
    for (const [name, value] of secrets) {
      for (const form of encodings(value)) assert.ok(!logs.includes(form), `${name} in the logs as ${form}`);
    }
  } finally {
    await server.close();
    server.cleanup();
  }
});
