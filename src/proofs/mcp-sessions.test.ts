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

const post = (body: unknown, session?: string) =>
  fetch(`${server.baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session === undefined ? {} : { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }),
    },
    body: JSON.stringify(body),
  });

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
};

/** Opens `count` sessions, ten at a time: their ids. */
async function open(count: number): Promise<string[]> {
  const ids: string[] = [];
  while (ids.length < count) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(10, count - ids.length) }, async () => {
        const answer = await post(initialize);
        await answer.text();
        assert.equal(answer.status, 200);
        return answer.headers.get('mcp-session-id') ?? '';
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

test('a flood of sessions: bounded in number and in memory, then refused with 503', async () => {
  // Warm up what every session shares (modules, schemas, caches) before measuring.
  const first = await open(20);
  const before = heapUsed();
  const flood = await open(500);
  const perSession = (heapUsed() - before) / flood.length;
  assert.ok(perSession < MAX_BYTES_PER_SESSION, `${Math.round(perSession)} bytes of heap a session`);
  await open(CAP - first.length - flood.length);

  const refused = await post(initialize);
  assert.equal(refused.status, 503);
  assert.ok(refused.headers.get('retry-after'));
  assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'service_unavailable');
  // Not an initialize: the protocol's 400 for a missing session, at the cap too.
  const noSession = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  assert.equal(noSession.status, 400);
  assert.equal(((await noSession.json()) as { error: { code: string } }).error.code, 'invalid_request');
  // The open sessions still answer; one ended makes room for one more.
  const listed = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list' }, first[0]);
  assert.equal(listed.status, 200);
  assert.equal(((await listed.json()) as { result: { tools: unknown[] } }).result.tools.length, 5);
  const ended = await fetch(`${server.baseUrl}/mcp`, {
    method: 'DELETE',
    headers: { 'mcp-session-id': first[0] ?? '', 'mcp-protocol-version': '2025-06-18' },
  });
  assert.equal(ended.status, 200);
  assert.equal((await open(1)).length, 1);
  assert.equal((await post(initialize)).status, 503);
});
