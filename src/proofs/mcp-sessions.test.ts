/**
 * The MCP endpoint's sessions under a flood: 1,000 are opened and never ended; the next initialize is
 * refused with 503 and Retry-After, while a message without a session is still the protocol's 400 and
 * an open session still answers. What a session costs the heap is measured after a collection: the SDK
 * would give each session's server a JSON Schema validator of its own (some 17 KB each) unless shared.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startServer, type TestServer } from '../../test/helper.ts';
import { send } from '../../test/nginx.ts';

/** The sessions the endpoint keeps open at most (docs/agents.md). */
const CAP = 1000;
/** The heap a session may cost: with the shared validator about 16 KB, with one of its own about 33 KB. */
const MAX_BYTES_PER_SESSION = 25_000;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let server: TestServer;
// Quiet logs: the test server keeps every line it writes, which would count as the sessions' memory.
before(async () => (server = await startServer({ env: { LOG_LEVEL: 'warn' } })));
after(async () => {
  await server.close();
  server.cleanup();
});

/** The client addresses of the flood: each may hold 20 sessions (docs/agents.md). */
const PER_ADDRESS = 20;
const addressOf = (n: number) => `127.0.3.${1 + Math.floor(n / PER_ADDRESS)}`;

/** A message to /mcp from `from` (any of 127.0.0.0/8), in a session or not. */
async function post(
  body: unknown,
  { session, from = '127.0.0.1' }: { session?: string; from?: string } = {},
) {
  const answer = await send(`${server.baseUrl}/mcp`, {
    method: 'POST',
    localAddress: from,
    headers: {
      accept: 'application/json, text/event-stream',
      ...(session === undefined ? {} : { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }),
    },
    body: JSON.stringify(body),
  });
  const header = (name: string) => {
    const value = answer.headers[name];
    return typeof value === 'string' ? value : null;
  };
  return { status: answer.status, header, json: () => JSON.parse(answer.text) as Record<string, any> };
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
};

/** Ends a session (DELETE /mcp). */
const end = (session: string, from: string) =>
  send(`${server.baseUrl}/mcp`, {
    method: 'DELETE',
    localAddress: from,
    headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
  });

let opened = 0;
/** Opens `count` sessions, ten at a time, each address its share: their ids. */
async function open(count: number): Promise<string[]> {
  const ids: string[] = [];
  while (ids.length < count) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(10, count - ids.length) }, async () => {
        const answer = await post(initialize, { from: addressOf(opened++) });
        assert.equal(answer.status, 200);
        return answer.header('mcp-session-id') ?? '';
      }),
    );
    ids.push(...answers);
  }
  return ids;
}

const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

test('one address holds at most 20 sessions; ending one makes room', async () => {
  const from = '127.0.5.1';
  const ids: string[] = [];
  for (let i = 0; i < PER_ADDRESS; i++) {
    const answer = await post(initialize, { from });
    assert.equal(answer.status, 200);
    ids.push(answer.header('mcp-session-id') ?? '');
  }
  const refused = await post(initialize, { from });
  assert.equal(refused.status, 429);
  assert.ok(refused.header('retry-after'));
  assert.equal(refused.json().error.code, 'rate_limited');
  assert.deepEqual(refused.json().error.details, { openSessions: PER_ADDRESS, limit: PER_ADDRESS });
  // Another address is not held back by this one.
  const other = await post(initialize, { from: '127.0.5.2' });
  assert.equal(other.status, 200);
  assert.equal((await end(ids.shift()!, from)).status, 200);
  const again = await post(initialize, { from });
  assert.equal(again.status, 200);
  assert.equal((await post(initialize, { from })).status, 429);
  // The next test counts every session: these end.
  for (const id of [...ids, again.header('mcp-session-id') ?? ''])
    assert.equal((await end(id, from)).status, 200);
  assert.equal((await end(other.header('mcp-session-id') ?? '', '127.0.5.2')).status, 200);
});

test('a flood of sessions: bounded in number and in memory, then refused with 503', async () => {
  // Warm up what every session shares (modules, schemas, caches) before measuring.
  const first = await open(20);
  const before = heapUsed();
  const flood = await open(500);
  const perSession = (heapUsed() - before) / flood.length;
  assert.ok(perSession < MAX_BYTES_PER_SESSION, `${Math.round(perSession)} bytes of heap a session`);
  await open(CAP - first.length - flood.length);

  const refused = await post(initialize, { from: '127.0.4.1' });
  assert.equal(refused.status, 503);
  assert.ok(refused.header('retry-after'));
  assert.equal(refused.json().error.code, 'service_unavailable');
  // Not an initialize: the protocol's 400 for a missing session, at the cap too.
  const noSession = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  assert.equal(noSession.status, 400);
  assert.equal(noSession.json().error.code, 'invalid_request');
  // The open sessions still answer; one ended makes room for one more.
  const listed = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, { session: first[0] });
  assert.equal(listed.status, 200);
  assert.equal(listed.json().result.tools.length, 5);
  assert.equal((await end(first[0] ?? '', addressOf(0))).status, 200);
  assert.equal((await post(initialize, { from: '127.0.4.2' })).status, 200);
  assert.equal((await post(initialize, { from: '127.0.4.3' })).status, 503);
});
