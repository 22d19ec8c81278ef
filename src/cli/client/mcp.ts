import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import {
  HashproofError,
  KeyManifestChangedError,
  LogCheckError,
  LogUncheckedError,
  type HashproofClient,
  type NotarizeInput,
} from '../../client/client.ts';
import { EXIT, NotVerifiedError, UsageError } from '../output.ts';
import { toolDefinitions, type ApiSchemas, type ToolName } from './mcp-tools.ts';
import { stampFiles } from './stamp.ts';
import { servedKeys } from './trusted-keys.ts';
import { verdictOf } from './verify.ts';

/**
 * `hashproof mcp`: a Model Context Protocol server on standard input and output, for an agent on this
 * machine (docs/agents.md). Its tools do what the commands do, through the same client (HASHPROOF_URL,
 * HASHPROOF_API_KEY, HASHPROOF_WALLET_KEY, HASHPROOF_STATE_DIR). Standard output carries the protocol's
 * messages and nothing else: every log line goes to standard error. Runs until the host closes the pipe.
 */
export async function mcp(client: HashproofClient, api: ApiSchemas): Promise<number> {
  const tools = toolDefinitions(api);
  // The low-level server: the tools' input schemas are the API's JSON Schemas, given as they are.
  const server = new Server(
    { name: 'hashproof', version: await packageVersion() },
    {
      capabilities: { tools: {} },
      instructions:
        'hashproof makes timestamped proofs of SHA-256 hashes. stamp_file hashes a file here and writes ' +
        'its proof file beside it; verify_file checks it later, offline. Only hashes leave this machine.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  const calls = new Set<Promise<CallToolResult>>();
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    const call = callTool(client, request.params.name, request.params.arguments ?? {});
    calls.add(call);
    return call.finally(() => calls.delete(call));
  });
  const closed = new Promise<void>((resolve) => (server.onclose = resolve));
  await server.connect(new StdioServerTransport());
  // A host that closes our standard input is done: the calls under way are answered, then the server
  // closes and the command ends.
  process.stdin.once('end', () => void answered(calls).then(() => server.close()));
  log(`serving ${tools.length} tools on standard input and output for ${client.baseUrl}`);
  await closed;
  return EXIT.ok;
}

/**
 * Resolves once every call under way has its answer written: the SDK writes an answer in the promise
 * callbacks that follow its call, which have all run by the next turn of the event loop.
 */
async function answered(calls: Set<Promise<CallToolResult>>): Promise<void> {
  await Promise.allSettled(calls);
  await new Promise((resolve) => setImmediate(resolve));
}

/**
 * The version of the package this command is part of: its package.json sits three folders up, from
 * src/cli/client/ in a checkout as from dist/cli/client/ in the installed package.
 */
async function packageVersion(): Promise<string> {
  const text = await readFile(new URL('../../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

/** A line on standard error, the only place the server writes anything but protocol messages. */
function log(line: string): void {
  process.stderr.write(`hashproof mcp: ${line}\n`);
}

type Arguments = Record<string, unknown>;

const TOOLS: Record<ToolName, (client: HashproofClient, args: Arguments) => Promise<unknown>> = {
  stamp_file: stampFile,
  stamp_hash: stampHash,
  verify_file: verifyFile,
  get_proof: (client, args) => client.getProof(stringOf(args, 'id', true)),
  // The service checks the query against its schema (SearchQuery) and answers invalid_request.
  search_proofs: (client, args) => client.search(args),
};

/** The answer of one tool call: its result, or a tool error carrying the API's error envelope. */
async function callTool(client: HashproofClient, name: string, args: Arguments): Promise<CallToolResult> {
  const tool = Object.hasOwn(TOOLS, name) ? TOOLS[name as ToolName] : undefined;
  // A tool that does not exist is a protocol error (the MCP specification's "Unknown tool"): there is
  // no tool to answer it.
  if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  try {
    return resultOf(await tool(client, args));
  } catch (error) {
    const envelope = envelopeOf(error);
    log(`${name}: ${envelope.error.code}: ${envelope.error.message}`);
    return { ...resultOf(envelope), isError: true };
  }
}

/** A value as the tool's answer: JSON text for any model, the same value structured for hosts that read it. */
function resultOf(value: unknown): CallToolResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
    structuredContent: value as Record<string, unknown>,
  };
}

/** A tool's argument that is not what its schema says, told in the API's terms. */
class ToolInputError extends Error {
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown>) {
    super(message);
    this.details = details;
  }
}

/** The API's error envelope of any failure (docs/api.md, "Errors"); the codes below it are the command's. */
function envelopeOf(error: unknown): {
  error: { code: string; message: string; details: Record<string, unknown> };
} {
  const of = (code: string, message: string, details: Record<string, unknown> = {}) => ({
    error: { code, message, details },
  });
  if (error instanceof HashproofError) return of(error.code, error.message, error.details);
  if (error instanceof ToolInputError) return of('invalid_request', error.message, error.details);
  if (error instanceof UsageError) return of('invalid_request', error.message);
  if (isFileError(error)) return of('invalid_request', (error as Error).message);
  if (error instanceof LogCheckError) return of('log_check_failed', error.message, { kind: error.kind });
  if (error instanceof LogUncheckedError) return of('log_unchecked', error.message);
  if (error instanceof KeyManifestChangedError) return of('key_manifest_changed', error.message);
  return of('internal_error', error instanceof Error ? error.message : String(error));
}

const isFileError = (error: unknown) =>
  ['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR', 'EPERM'].includes((error as NodeJS.ErrnoException)?.code ?? '');

/** A string argument; a missing required one, or one of another type, is invalid_request. */
function stringOf(args: Arguments, field: string, required: true): string;
function stringOf(args: Arguments, field: string, required: false): string | undefined;
function stringOf(args: Arguments, field: string, required: boolean): string | undefined {
  const value = args[field];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '')
    throw new ToolInputError(`${field} must be a non-empty string`, { field });
  return value;
}

/** Refuses arguments the tool's schema does not name (its `additionalProperties: false`). */
function onlyFields(args: Arguments, fields: string[]): void {
  const unknown = Object.keys(args).filter((field) => !fields.includes(field));
  if (unknown.length > 0)
    throw new ToolInputError(`unknown argument ${unknown.join(', ')}`, { fields: unknown });
}

/** A regular file named by a tool, resolved against the directory the server runs in. */
async function regularFile(named: string): Promise<string> {
  const file = path.resolve(named);
  const info = await stat(file).catch(() => undefined);
  if (info === undefined) throw new ToolInputError(`no such file: ${named}`, { field: 'path' });
  if (!info.isFile()) throw new ToolInputError(`${named} is not a regular file`, { field: 'path' });
  return file;
}

/** `stamp_file`: what `hashproof stamp <file>` does, answered as its `--json` result. */
async function stampFile(client: HashproofClient, args: Arguments) {
  onlyFields(args, ['path', 'label', 'metadata']);
  const file = await regularFile(stringOf(args, 'path', true));
  const metadata = args.metadata;
  if (
    metadata !== undefined &&
    (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
  )
    throw new ToolInputError('metadata must be a JSON object', { field: 'metadata' });
  const [result] = await stampFiles(client, [file], {
    label: stringOf(args, 'label', false),
    metadata: metadata as Record<string, unknown> | undefined,
    json: true,
    keys: () => servedKeys(client),
    print: log,
  });
  return { ok: true, ...result };
}

/** `stamp_hash`: the API's notarize, its body as given, its links made absolute. */
async function stampHash(client: HashproofClient, args: Arguments) {
  // The service checks the body against its schema (NotarizeBody) and answers invalid_request.
  const result = await client.notarize(args as unknown as NotarizeInput);
  return {
    ...result,
    links: { proof: client.baseUrl + result.links.proof, verify: client.baseUrl + result.links.verify },
  };
}

/** `verify_file`: the verdict of `hashproof verify <file> [proof file]`, as its `--json` prints it. */
async function verifyFile(client: HashproofClient, args: Arguments) {
  onlyFields(args, ['path', 'proofFile', 'online', 'witnesses', 'witnessQuorum']);
  const file = await regularFile(stringOf(args, 'path', true));
  const proofFile = stringOf(args, 'proofFile', false);
  if (args.online !== undefined && typeof args.online !== 'boolean')
    throw new ToolInputError('online must be true or false', { field: 'online' });
  const { witnesses, witnessQuorum } = args;
  if (witnesses !== undefined && !(Array.isArray(witnesses) && witnesses.every((w) => typeof w === 'string')))
    throw new ToolInputError('witnesses must be a list of verifier keys', { field: 'witnesses' });
  if (
    witnessQuorum !== undefined &&
    !(typeof witnessQuorum === 'number' && Number.isSafeInteger(witnessQuorum))
  )
    throw new ToolInputError('witnessQuorum must be a whole number', { field: 'witnessQuorum' });
  if (witnessQuorum !== undefined && witnesses === undefined)
    throw new ToolInputError('witnessQuorum needs witnesses', { field: 'witnessQuorum' });
  try {
    const verdict = await verdictOf(client, proofFile === undefined ? [file] : [file, proofFile], {
      online: args.online === true,
      ...(witnesses === undefined ? {} : { witness: witnesses }),
      ...(witnessQuorum === undefined ? {} : { 'witness-quorum': String(witnessQuorum) }),
    });
    return { ok: verdict.verified, ...verdict };
  } catch (error) {
    // No trusted keys for the service: a verdict, not a failure of the tool.
    if (!(error instanceof NotVerifiedError)) throw error;
    return { ok: false, verified: false, checks: [], problems: [error.message] };
  }
}
