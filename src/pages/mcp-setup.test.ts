/**
 * The `mcpServers` configuration the agents' documents advertise, used as an agent host uses it: the
 * http entry by the official SDK's Streamable HTTP client, the stdio entry started by the SDK's own
 * stdio transport with its placeholder replaced by this checkout. The tools each server lists are the
 * tools the documents name. README.md and docs/agents.md show the same configuration.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { api, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import type { Facts } from './facts.ts';
import { mcpSetup } from './mcp-setup.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

let server: TestServer;
// No PUBLIC_BASE_URL: the service's public address is the one it listens on, so the advertised URL works.
before(async () => (server = await startServer()));
after(async () => {
  await server.close();
  server.cleanup();
});

/** The `mcp` field of a document, which /api/quickstart and /api/capabilities both carry. */
async function advertised(document: string) {
  const res = await api(server.baseUrl, document);
  assert.equal(res.status, 200, res.text);
  return res.body.mcp;
}

/** The first text content of a tool's answer, as JSON. */
function answerOf(result: CallToolResult): Record<string, any> {
  const [first] = result.content;
  return JSON.parse(first?.type === 'text' ? first.text : 'null') as Record<string, any>;
}

describe('the advertised MCP configuration', () => {
  test('/api/quickstart and /api/capabilities advertise the same configuration', async () => {
    const quickstart = await advertised('/api/quickstart');
    assert.deepEqual(await advertised('/api/capabilities'), quickstart);
    assert.equal(quickstart.remote.url, `${server.baseUrl}/mcp`);
    assert.deepEqual(quickstart.remote.configuration, {
      mcpServers: { hashproof: { type: 'http', url: `${server.baseUrl}/mcp` } },
    });
    assert.equal(quickstart.page, `${server.baseUrl}/agents`);
  });

  test('the http entry, used as it is by the SDK client, lists the tools the documents name', async () => {
    const { remote } = await advertised('/api/quickstart');
    const entry = remote.configuration.mcpServers.hashproof;
    const client = new Client({ name: 'agent-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(entry.url)));
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        remote.tools,
      );
      // A call through it answers as the documents say: the newest proofs, none yet.
      const recent = (await client.callTool({ name: 'recent_proofs', arguments: {} })) as CallToolResult;
      assert.equal(recent.isError, undefined, JSON.stringify(recent.content));
      assert.equal(answerOf(recent).ok, true);
    } finally {
      await client.close();
    }
  });

  test('the stdio entry, its placeholder replaced by a checkout, starts `hashproof mcp` on this service', async () => {
    const { local } = await advertised('/api/quickstart');
    assert.deepEqual(Object.keys(local.placeholders), ['/path/to/hashproof']);
    const fill = (text: string) => text.replaceAll('/path/to/hashproof', ROOT);
    const entry = local.configuration.mcpServers.hashproof;
    const command = fill(entry.command);
    const args = (entry.args as string[]).map(fill);
    assert.equal(entry.env.HASHPROOF_URL, server.baseUrl);
    // The launch line is the command `hashproof mcp`: the Node 24 of the checkout, its CLI, `mcp`.
    assert.ok(existsSync(command), command);
    assert.equal(args.length, 2);
    assert.ok(existsSync(args[0] ?? ''), args[0]);
    assert.equal(args[1], 'mcp');
    assert.equal(local.command, 'hashproof mcp');

    const transport = new StdioClientTransport({
      command,
      args,
      // The entry's environment as it is, and a state folder of this test's own.
      env: { ...entry.env, HASHPROOF_STATE_DIR: path.join(makeDataDir(), 'state') },
      stderr: 'ignore',
    });
    const client = new Client({ name: 'agent-host', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        local.tools,
      );
      // It talks to the service the entry names: an unknown proof is the service's not_found.
      const id = 'proof_00000000000000000000000000';
      const missing = (await client.callTool({ name: 'get_proof', arguments: { id } })) as CallToolResult;
      assert.equal(missing.isError, true);
      assert.equal(answerOf(missing).error.code, 'not_found');
    } finally {
      await client.close();
    }
  });
});

describe('README.md and docs/agents.md', () => {
  /** What the documents of a service at http://127.0.0.1:8080, the address the README uses, advertise. */
  const setup = mcpSetup({ url: (p: string) => `http://127.0.0.1:8080${p}` } as Facts);
  /** The JSON code blocks of a Markdown file that hold an `mcpServers` configuration. */
  const configurations = (file: string) =>
    [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/```json\n([\s\S]*?)\n```/g)]
      .filter((match) => (match[1] ?? '').includes('"mcpServers"'))
      .map((match) => JSON.parse(match[1] ?? 'null') as Record<string, any>);

  test('the README shows the configuration the documents advertise, both entries', () => {
    const shown = configurations('README.md');
    assert.deepEqual(shown, [setup.remote.configuration, setup.local.configuration]);
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const name of [...setup.remote.tools, ...setup.local.tools])
      assert.ok(readme.includes(`\`${name}\``), name);
  });

  test('docs/agents.md shows the same stdio and http entries', () => {
    const shown = configurations('docs/agents.md');
    assert.deepEqual(shown[0], setup.local.configuration);
    const http = shown.find((value) => value.mcpServers.hashproof.type === 'http');
    const { headers, ...entry } = http?.mcpServers.hashproof ?? {};
    assert.deepEqual(entry, setup.remote.configuration.mcpServers.hashproof);
    assert.deepEqual(Object.keys(headers ?? {}), [setup.remote.apiKeyHeader]);
  });
});
