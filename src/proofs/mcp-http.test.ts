/**
 * The service's MCP endpoint (/mcp, Streamable HTTP) through the official SDK's own client: the tools
 * are listed with the API's schemas, each is called, errors carry the API's envelope, a replay by
 * idempotency key answers the same proof, an API key on the connection bills its account.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  adminHeaders,
  api,
  ADMIN_KEY,
  ignoringLog,
  notarizeBody,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { NotarizeBody, SearchQuery } from './proof-schemas.ts';

let server: TestServer;
before(async () => (server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY } })));
after(async () => {
  await server.close();
  server.cleanup();
});

async function connect(headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'hashproof-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

/** A tool's answer as JSON: its text content, which carries the same as its structured content. */
async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text: string }[];
  const parsed = JSON.parse(content[0]?.text ?? 'null') as Record<string, any>;
  assert.deepEqual(result.structuredContent, parsed);
  return { isError: result.isError === true, body: parsed };
}

describe('the MCP endpoint /mcp', () => {
  test('lists its tools with the API schemas and no output schema', async () => {
    const client = await connect();
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        ['notarize', 'get_proof', 'verify_proof', 'search_proofs', 'recent_proofs'],
      );
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      assert.deepEqual(byName.get('notarize')?.inputSchema, JSON.parse(JSON.stringify(NotarizeBody)));
      assert.deepEqual(byName.get('search_proofs')?.inputSchema, JSON.parse(JSON.stringify(SearchQuery)));
      for (const tool of tools) assert.equal(tool.outputSchema, undefined, tool.name);
    } finally {
      await client.close();
    }
  });

  test('each tool: notarize, its replay, get, verify, search, recent; errors carry the API codes', async () => {
    const client = await connect();
    try {
      const request = notarizeBody();
      const made = await call(client, 'notarize', request);
      assert.equal(made.isError, false, JSON.stringify(made.body));
      assert.equal(made.body.idempotentReplay, false);
      const { proof } = made.body;
      assert.equal(proof.contentHash, request.contentHash);
      const again = await call(client, 'notarize', request);
      assert.equal(again.body.idempotentReplay, true);
      assert.equal(again.body.proof.id, proof.id);
      // The same proof as the HTTP API answers (its place in the log may come between the two reads).
      const http = await api(server.baseUrl, `/api/proofs/${proof.id}`);
      const read = await call(client, 'get_proof', { id: proof.id });
      assert.deepEqual(ignoringLog(read.body.proof), ignoringLog(http.body.proof));
      const verified = await call(client, 'verify_proof', { id: proof.id });
      assert.equal(verified.body.verified, true);
      assert.equal(verified.body.checks.signature.status, 'valid');
      const found = await call(client, 'search_proofs', { idempotencyKey: request.idempotencyKey });
      assert.deepEqual(
        found.body.proofs.map((p: { id: string }) => p.id),
        [proof.id],
      );
      const recent = await call(client, 'recent_proofs', { limit: 1 });
      assert.equal(recent.body.proofs.length, 1);

      const bad = await call(client, 'notarize', { ...notarizeBody(), contentHash: 'sha256:123' });
      assert.equal(bad.isError, true);
      assert.equal(bad.body.error.code, 'invalid_request');
      assert.equal(bad.body.error.details.errors[0].path, '/contentHash');
      const reused = await call(client, 'notarize', { ...request, label: 'other' });
      assert.equal(reused.body.error.code, 'idempotency_key_reused');
      const missing = await call(client, 'get_proof', { id: 'proof_01JZ0000000000000000000000' });
      assert.equal(missing.isError, true);
      assert.equal(missing.body.error.code, 'not_found');
      const extra = await call(client, 'search_proofs', { nope: 1 });
      assert.equal(extra.body.error.code, 'invalid_request');
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool/);
    } finally {
      await client.close();
    }
  });

  test("an API key on the connection: its proofs are the account's", async () => {
    const account = (
      await api(server.baseUrl, '/api/accounts', { body: { name: 'agent' }, headers: adminHeaders })
    ).body.account;
    const key = await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, {
      body: { scopes: ['proofs:write'] },
      headers: adminHeaders,
    });
    assert.equal(key.status, 201, key.text);
    const client = await connect({ 'x-service-key': key.body.key });
    try {
      const made = await call(client, 'notarize', notarizeBody());
      assert.equal(made.body.proof.accountId, account.id);
    } finally {
      await client.close();
    }
    // A wrong key is refused at the door, as on every route.
    await assert.rejects(connect({ 'x-service-key': 'hp_live_wrong' }));
  });

  test('malformed JSON-RPC, an unknown session and an oversized message get clear refusals', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body,
      });
    const broken = await post('{"jsonrpc": "2.0", ');
    assert.equal(broken.status, 400);
    // An empty batch is no message: refused, not accepted as if it held notifications.
    const empty = await post('[]');
    assert.equal(empty.status, 400);
    assert.equal(((await empty.json()) as { error: { code: string } }).error.code, 'invalid_request');
    const unknown = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), {
      'mcp-session-id': 'no-such-session',
    });
    assert.equal(unknown.status, 404);
    const noSession = await fetch(`${server.baseUrl}/mcp`, { headers: { accept: 'text/event-stream' } });
    assert.equal(noSession.status, 400);
    assert.equal(((await noSession.json()) as { error: { code: string } }).error.code, 'invalid_request');
    // Only an initialize request starts a session: any other message without one is refused.
    const notInitialize = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    assert.equal(notInitialize.status, 400);
    assert.equal(((await notInitialize.json()) as { error: { code: string } }).error.code, 'invalid_request');
    const big = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'x', params: { pad: 'x'.repeat(200_000) } }),
    );
    assert.equal(big.status, 413);
    assert.equal(((await big.json()) as { error: { code: string } }).error.code, 'payload_too_large');
    // A served answer carries the headers of every answer, and is logged as every request is.
    const served = await post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'raw', version: '1' },
        },
      }),
    );
    assert.equal(served.status, 200);
    assert.ok(served.headers.get('mcp-session-id'));
    assert.ok(served.headers.get('x-request-id'));
    assert.equal(served.headers.get('x-content-type-options'), 'nosniff');
    await server.requestLogged(served);
    // Params the method's schema refuses: the protocol's Invalid params (-32602), not an internal error.
    const session = { 'mcp-session-id': served.headers.get('mcp-session-id') ?? '' };
    for (const [method, params] of [
      ['tools/call', undefined],
      ['tools/call', { name: 5 }],
      ['tools/call', { name: 'notarize', arguments: [1] }],
      ['tools/list', { cursor: 5 }],
    ] as const) {
      const refused = await post(JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }), session);
      assert.equal(refused.status, 200);
      const answer = (await refused.json()) as { id: number; error: { code: number } };
      assert.deepEqual([answer.id, answer.error.code], [7, -32602], JSON.stringify({ method, params }));
    }
    const health = await api(server.baseUrl, '/health');
    assert.equal(health.status, 200);
  });
});
