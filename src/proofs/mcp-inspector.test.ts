/**
 * Both MCP servers (/mcp, and `hashproof mcp` over stdio) through the official MCP Inspector's command-line mode
 * (`@modelcontextprotocol/inspector --cli`, a client the service does not share code with): it lists the
 * five tools, a notarize call makes a proof that get_proof reads back, and a refused call comes back as
 * a tool error carrying the API's error code. The inspector runs as a child process in a process group of
 * its own, with a scratch home and a stand-in for the browser: each run must exit by itself, leave no
 * process behind (so no port of its own open) and never try to open a browser.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ignoringLog, notarizeBody, scratchDirs, startServer, type TestServer } from '../../test/helper.ts';
import { finished, killGroup, start, type Run } from '../../test/process.ts';

const INSPECTOR = path.join(
  path.dirname(fileURLToPath(import.meta.resolve('@modelcontextprotocol/inspector/package.json'))),
  'clients/launcher/build/index.js',
);
/** Each run of the inspector: starting Node and its bundle on a busy two-core machine takes a while. */
const RUN_TIMEOUT_MS = 3 * 60_000;

let server: TestServer;
let home: string;
let browserCalls: string;
const scratch = scratchDirs();

before(async () => {
  server = await startServer();
  home = scratch();
  // Whatever would open a browser (xdg-open, or the $BROWSER it falls back to) writes here instead.
  const shims = path.join(home, 'bin');
  mkdirSync(shims);
  browserCalls = path.join(home, 'browser-calls');
  for (const name of ['xdg-open', 'browser']) {
    writeFileSync(path.join(shims, name), `#!/bin/sh\necho "$0 $*" >> '${browserCalls}'\n`);
    chmodSync(path.join(shims, name), 0o755);
  }
});
after(async () => {
  await server.close();
  server.cleanup();
});

/** The command line's `hashproof mcp`, as an agent host starts it. */
const CLI = path.join(import.meta.dirname, '..', 'cli', 'main.ts');

/**
 * One run of `mcp-inspector --cli` to its exit: against /mcp over Streamable HTTP, or against
 * `hashproof mcp` over stdio (the inspector starts it, configured for the same service).
 */
async function inspect(args: string[], transport: 'http' | 'stdio' = 'http'): Promise<Run> {
  const target =
    transport === 'http'
      ? ['--server-url', `${server.baseUrl}/mcp`, '--transport', 'http']
      : [
          '--transport',
          'stdio',
          '-e',
          `HASHPROOF_URL=${server.baseUrl}`,
          '-e',
          `HASHPROOF_STATE_DIR=${path.join(home, 'state')}`,
        ];
  const command = transport === 'stdio' ? ['--', process.execPath, CLI, 'mcp'] : [];
  const child = start(
    process.execPath,
    [
      INSPECTOR,
      '--cli',
      ...target,
      '--format',
      'json',
      // Never an interactive login (which would listen for the OAuth callback and open a browser).
      '--stored-auth-only',
      ...args,
      ...command,
    ],
    {
      detached: true,
      env: {
        PATH: `${path.join(home, 'bin')}:${process.env.PATH ?? ''}`,
        HOME: home,
        BROWSER: path.join(home, 'bin', 'browser'),
        MCP_CATALOG_PATH: path.join(home, 'catalog.json'),
        NO_COLOR: '1',
      },
    },
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    const run = await Promise.race([
      finished(child),
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new Error(`mcp-inspector ${args.join(' ')}: no exit in ${RUN_TIMEOUT_MS} ms`)),
          RUN_TIMEOUT_MS,
        );
      }),
    ]);
    // The group is empty once the inspector has exited: nothing of it still runs or listens.
    assert.throws(
      () => process.kill(-child.pid!, 0),
      { code: 'ESRCH' },
      'a process of the inspector is left',
    );
    assert.equal(
      existsSync(browserCalls),
      false,
      existsSync(browserCalls) ? readFileSync(browserCalls, 'utf8') : '',
    );
    return run;
  } finally {
    clearTimeout(timer);
    killGroup(child);
  }
}

/** The JSON the inspector printed on standard output (`--format json`: one object). */
function printed(run: Run): { result: Record<string, any> } {
  try {
    return JSON.parse(run.stdout) as { result: Record<string, any> };
  } catch {
    assert.fail(`not JSON (exit ${run.code}): ${run.stdout}\n${run.stderr}`);
  }
}

/** A tool's answer: its text content as JSON, which is the same as its structured content. */
function toolAnswer(run: Run): { isError: boolean; body: Record<string, any> } {
  const { result } = printed(run);
  const content = result.content as { type: string; text: string }[];
  assert.equal(content[0]?.type, 'text');
  const body = JSON.parse(content[0]?.text ?? 'null') as Record<string, any>;
  assert.deepEqual(result.structuredContent, body);
  return { isError: result.isError === true, body };
}

describe('the MCP endpoint through the MCP Inspector (CLI)', { timeout: 15 * 60_000 }, () => {
  test('tools/list lists the five tools with their input schemas', async () => {
    const run = await inspect(['--method', 'tools/list']);
    assert.equal(run.code, 0, run.stderr);
    const tools = printed(run).result.tools as { name: string; inputSchema: Record<string, any> }[];
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['notarize', 'get_proof', 'verify_proof', 'search_proofs', 'recent_proofs'],
    );
    const notarize = tools[0]?.inputSchema;
    assert.deepEqual(notarize?.required, ['contentHash', 'label', 'idempotencyKey']);
    assert.equal(notarize?.additionalProperties, false);
  });

  test('tools/call notarize makes a proof, and get_proof reads the same proof', async () => {
    const request = notarizeBody() as { contentHash: string; label: string; idempotencyKey: string };
    const made = await inspect([
      '--method',
      'tools/call',
      '--tool-name',
      'notarize',
      '--tool-arg',
      `contentHash=${request.contentHash}`,
      `label=${request.label}`,
      `idempotencyKey=${request.idempotencyKey}`,
    ]);
    assert.equal(made.code, 0, made.stderr);
    const { isError, body } = toolAnswer(made);
    assert.equal(isError, false, JSON.stringify(body));
    assert.equal(body.idempotentReplay, false);
    const proof = body.proof as { id: string; contentHash: string; label: string; log?: unknown };
    assert.match(proof.id, /^proof_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(proof.contentHash, request.contentHash);
    assert.equal(proof.label, request.label);

    const read = await inspect([
      '--method',
      'tools/call',
      '--tool-name',
      'get_proof',
      '--tool-arg',
      `id=${proof.id}`,
    ]);
    assert.equal(read.code, 0, read.stderr);
    const answer = toolAnswer(read);
    assert.equal(answer.isError, false, JSON.stringify(answer.body));
    // The same proof (its place in the log may have come between the two calls).
    assert.deepEqual(ignoringLog(answer.body.proof), ignoringLog(proof));
  });

  test('a call with a bad argument is a tool error carrying the API error code', async () => {
    const request = notarizeBody() as { label: string; idempotencyKey: string };
    const run = await inspect([
      '--method',
      'tools/call',
      '--tool-name',
      'notarize',
      '--tool-arg',
      'contentHash=sha256:123',
      `label=${request.label}`,
      `idempotencyKey=${request.idempotencyKey}`,
    ]);
    // The inspector exits non-zero for a tool that answered isError, and says so on standard error.
    assert.notEqual(run.code, 0);
    assert.equal(
      (JSON.parse(run.stderr.trim().split('\n').at(-1) ?? '{}') as { error?: { code?: string } }).error?.code,
      'tool_is_error',
    );
    const { isError, body } = toolAnswer(run);
    assert.equal(isError, true);
    assert.equal(body.error.code, 'invalid_request');
    assert.deepEqual(
      (body.error.details.errors as { path: string }[]).map((error) => error.path),
      ['/contentHash'],
    );
  });
});

describe('hashproof mcp (stdio) through the MCP Inspector (CLI)', { timeout: 15 * 60_000 }, () => {
  test('tools/list lists the five tools of the command', async () => {
    const run = await inspect(['--method', 'tools/list'], 'stdio');
    assert.equal(run.code, 0, run.stderr);
    const tools = printed(run).result.tools as { name: string }[];
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['stamp_file', 'stamp_hash', 'verify_file', 'get_proof', 'search_proofs'],
    );
  });

  test('stamp_hash makes a proof, which the service holds', async () => {
    const request = notarizeBody() as { contentHash: string; label: string; idempotencyKey: string };
    const made = await inspect(
      [
        '--method',
        'tools/call',
        '--tool-name',
        'stamp_hash',
        '--tool-arg',
        `contentHash=${request.contentHash}`,
        `label=${request.label}`,
        `idempotencyKey=${request.idempotencyKey}`,
      ],
      'stdio',
    );
    assert.equal(made.code, 0, made.stderr);
    const { isError, body } = toolAnswer(made);
    assert.equal(isError, false, JSON.stringify(body));
    const id = (body.proof as { id: string }).id;
    const stored = await fetch(`${server.baseUrl}/api/proofs/${id}`);
    assert.equal(stored.status, 200);
    assert.equal(
      ((await stored.json()) as { proof: { contentHash: string } }).proof.contentHash,
      request.contentHash,
    );
  });
});
