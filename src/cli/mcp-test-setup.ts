/**
 * `hashproof mcp` as an agent host runs it: spawned by the SDK's own stdio transport, spoken to by the
 * SDK's own client. A line on its standard output that is not a JSON-RPC message reaches the client's
 * `onerror` (the transport fails to parse it), so `protocolErrors` stays empty only while standard
 * output carries the protocol alone.
 */
import assert from 'node:assert/strict';
import type { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI } from './cli-test-setup.ts';

export interface McpSession {
  client: Client;
  protocolErrors: Error[];
  /** What the server wrote on standard error so far. */
  stderr: () => string;
  /** A tool's answer: whether it is an error, and the JSON of its text (the same as its structured content). */
  call: (
    name: string,
    args: Record<string, unknown>,
  ) => Promise<{ isError: boolean; answer: Record<string, unknown> }>;
}

/** Starts `hashproof mcp` in `cwd` with only this environment (and PATH), and connects to it. */
export async function startMcp(env: Record<string, string>, cwd: string): Promise<McpSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp'],
    env: { PATH: process.env.PATH ?? '', ...env },
    cwd,
    stderr: 'pipe',
  });
  let stderr = '';
  (transport.stderr as PassThrough | null)
    ?.setEncoding('utf8')
    .on('data', (chunk: string) => (stderr += chunk));
  const client = new Client({ name: 'hashproof-test', version: '1.0.0' });
  const protocolErrors: Error[] = [];
  client.onerror = (error) => protocolErrors.push(error);
  await client.connect(transport);
  return {
    client,
    protocolErrors,
    stderr: () => stderr,
    call: async (name, args) => {
      const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
      return { isError: result.isError === true, answer: answerOf(result) };
    },
  };
}

/** A tool's answer, as JSON in its text and as structured content, which must say the same. */
function answerOf(result: CallToolResult): Record<string, unknown> {
  const [first] = result.content;
  assert.equal(first?.type, 'text');
  const parsed = JSON.parse(first.type === 'text' ? first.text : '') as Record<string, unknown>;
  assert.deepEqual(result.structuredContent, parsed);
  return parsed;
}
