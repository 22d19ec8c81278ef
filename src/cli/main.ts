#!/usr/bin/env node
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { PrivateKeyAccount } from 'viem/accounts';
import {
  createClient,
  DEFAULT_TIMEOUT_MS,
  HashproofError,
  KeyManifestChangedError,
  LogCheckError,
  LogUncheckedError,
  type HashproofClient,
} from '../client/client.ts';
import { KeyFileModeError } from '../keys/key-directory.ts';
import { admin } from './client/admin.ts';
import { monitor } from './client/monitor.ts';
import { search, show } from './client/show.ts';
import { stamp } from './client/stamp.ts';
import { stampAggregate } from './client/stamp-aggregate.ts';
import { verify } from './client/verify.ts';
import { WitnessQuorumError } from './client/witnesses.ts';
import { HELP } from './help.ts';
import { backup, restore } from './operator/backup.ts';
import { keys } from './operator/keys.ts';
import { serve } from './operator/serve.ts';
import { witness } from './operator/witness.ts';
import { escapeControl, EXIT, NotVerifiedError, print, UsageError } from './output.ts';

const OPTIONS = {
  url: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  label: { type: 'string' },
  metadata: { type: 'string', multiple: true },
  out: { type: 'string' },
  aggregate: { type: 'boolean' },
  ots: { type: 'boolean' },
  'api-key': { type: 'string' },
  online: { type: 'boolean' },
  keys: { type: 'string' },
  'tsa-roots': { type: 'string' },
  'bitcoin-headers': { type: 'string' },
  q: { type: 'string' },
  'content-hash': { type: 'string' },
  file: { type: 'string' },
  account: { type: 'string' },
  limit: { type: 'string' },
  name: { type: 'string' },
  owner: { type: 'string' },
  'webhook-url': { type: 'string' },
  events: { type: 'string' },
  port: { type: 'string' },
  database: { type: 'string' },
  mode: { type: 'string' },
  once: { type: 'boolean' },
  from: { type: 'string' },
  force: { type: 'boolean' },
  'interval-ms': { type: 'string' },
  'keys-dir': { type: 'string' },
  'public-base-url': { type: 'string' },
  'activate-in': { type: 'string' },
  timeout: { type: 'string' },
  'max-entries': { type: 'string' },
  'state-dir': { type: 'string' },
  log: { type: 'string', multiple: true },
  listen: { type: 'string' },
  witness: { type: 'string', multiple: true },
  'witness-quorum': { type: 'string' },
  'witness-wait': { type: 'string' },
} satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parse>['values'];
const parse = (args: string[]) => parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });

/** `--timeout <seconds>`: the most one try of a request may take (default 30 s). */
function timeoutOf(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_TIMEOUT_MS;
  const seconds = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(seconds > 0) || seconds > 86_400)
    throw new UsageError(
      `--timeout takes a number of seconds above 0 (at most 86400), got ${JSON.stringify(raw)}`,
    );
  return Math.ceil(seconds * 1000);
}

/** The x402 wallet of HASHPROOF_WALLET_KEY (a 0x-prefixed 32-byte hex private key), if set. */
async function walletFromEnvironment(): Promise<PrivateKeyAccount | undefined> {
  const key = process.env.HASHPROOF_WALLET_KEY?.trim();
  if (key === undefined || key === '') return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(key))
    throw new UsageError('HASHPROOF_WALLET_KEY must be a 0x-prefixed 32-byte hex private key');
  const { privateKeyToAccount } = await import('viem/accounts');
  return privateKeyToAccount(key as `0x${string}`);
}

/**
 * Every command: whether it talks to a service (then a client is made for it, from --url, the API key,
 * the administrator key, the wallet and --timeout), what it runs, and its help. Client commands talk to
 * a service through the client library (cli/client/); operator commands work on the service's own
 * database and key files on this machine (cli/operator/) and make no client.
 */
type Command = { usage: string } & (
  | { needsClient: true; run: (client: HashproofClient, args: string[], values: Values) => Promise<number> }
  | { needsClient: false; run: (args: string[], values: Values) => Promise<number> }
);

const COMMANDS: Record<string, Command> = {
  stamp: {
    needsClient: true,
    run: (client, args, values) =>
      values.aggregate || values.ots ? stampAggregate(client, args, values) : stamp(client, args, values),
    usage: HELP.stamp,
  },
  verify: {
    needsClient: true,
    run: (client, args, values) => verify(client, args, values, timeoutOf(values.timeout)),
    usage: HELP.verify,
  },
  show: { needsClient: true, run: show, usage: HELP.show },
  search: { needsClient: true, run: (client, _args, values) => search(client, values), usage: HELP.search },
  admin: { needsClient: true, run: admin, usage: HELP.admin },
  monitor: {
    needsClient: true,
    run: (client, _args, values) => monitor(client, values),
    usage: HELP.monitor,
  },
  mcp: { needsClient: true, run: (client) => mcpServer(client), usage: HELP.mcp },
  serve: { needsClient: false, run: (_args, values) => serve(values), usage: HELP.serve },
  keys: {
    needsClient: false,
    run: (args, values) =>
      keys(args, {
        keysDir: values['keys-dir'],
        publicBaseUrl: values['public-base-url'],
        activateIn: values['activate-in'],
        out: values.out,
        json: values.json,
      }),
    usage: HELP.keys,
  },
  backup: { needsClient: false, run: (_args, values) => backup(values), usage: HELP.backup },
  restore: { needsClient: false, run: (_args, values) => restore(values), usage: HELP.restore },
  witness: { needsClient: false, run: (_args, values) => witness(values), usage: HELP.witness },
  help: {
    needsClient: false,
    run: async ([topic]) => (print(usageOf(topic)), EXIT.ok),
    usage: 'Usage: hashproof help [command]   (the same as hashproof [command] --help)',
  },
};

/**
 * `hashproof mcp`, loaded only when run (the MCP SDK is not needed by any other command). Its tools
 * take their inputs from the API's own schemas, which main.ts may import and client commands may not.
 */
async function mcpServer(client: HashproofClient): Promise<number> {
  const [{ mcp }, { NotarizeBody, SearchQuery, ProofIdParams }] = await Promise.all([
    import('./client/mcp.ts'),
    import('../proofs/proof-schemas.ts'),
  ]);
  return mcp(client, { notarizeBody: NotarizeBody, searchQuery: SearchQuery, proofIdParams: ProofIdParams });
}

/** The help of a command, or of the whole command when none (or an unknown one) is named. */
const usageOf = (name: string | undefined): string =>
  (name === undefined ? undefined : COMMANDS[name]?.usage) ?? HELP.main;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  const [name, ...rest] = positionals;
  const command = name === undefined ? undefined : COMMANDS[name];
  if (values.help || name === undefined) return (print(usageOf(name)), EXIT.ok);
  if (command === undefined) throw new UsageError(`unknown command ${name}; see hashproof --help`);
  if (!command.needsClient) return command.run(rest, values);
  return command.run(await clientOf(values), rest, values);
}

/** The client of the service a command talks to (--url or HASHPROOF_URL, keys from the environment). */
async function clientOf(values: Values): Promise<HashproofClient> {
  const baseUrl = values.url ?? process.env.HASHPROOF_URL ?? 'http://127.0.0.1:8080';
  if (!/^https?:\/\//.test(baseUrl) || !URL.canParse(baseUrl))
    throw new UsageError(
      `${values.url === undefined ? 'HASHPROOF_URL' : '--url'} must be the service's http(s) address, as in http://127.0.0.1:8080; got "${baseUrl}"`,
    );
  return createClient({
    baseUrl,
    apiKey: values['api-key'] ?? process.env.HASHPROOF_API_KEY,
    adminKey: process.env.SERVICE_ADMIN_KEY,
    payer: await walletFromEnvironment(),
    timeoutMs: timeoutOf(values.timeout),
  });
}

/** Whether an error is a file named on the command line that cannot be read or written (exit code 2). */
const isFileError = (error: unknown) =>
  ['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR', 'EPERM'].includes((error as NodeJS.ErrnoException)?.code ?? '');

/**
 * The exit code of an error, and the one line told on standard error (docs/cli.md, "Exit codes"): 1 a
 * proof or a log failed a check, or the service refused the request (a 4xx with its code); 2 usage; 3 the
 * check could not be made (no usable answer, a timeout, an answer over its cap or malformed, a 429 or
 * 5xx after the retries, no consistency proof). Text from elsewhere is printed escaped.
 */
function exitOf(error: unknown): { code: number; line: string } {
  const message = escapeControl(error instanceof Error ? error.message : String(error));
  // One line that says it all: `log fork detected: …` names the log and both checkpoints.
  if (error instanceof LogCheckError) return { code: EXIT.failed, line: message };
  // `not verified: no trusted keys …`, or `key manifest changed: …`: likewise one line.
  if (error instanceof NotVerifiedError || error instanceof KeyManifestChangedError)
    return { code: EXIT.failed, line: message };
  if (error instanceof LogUncheckedError) return { code: EXIT.network, line: message };
  // The proof is made and its file written; its witnesses have not cosigned it yet (exit 3).
  if (error instanceof WitnessQuorumError) return { code: EXIT.network, line: `hashproof: ${message}` };
  if (error instanceof UsageError) return { code: EXIT.usage, line: `hashproof: ${message}` };
  if (error instanceof HashproofError) {
    const suffix = error.isNetworkError ? '' : ` (${error.status} ${escapeControl(error.code)})`;
    return {
      code: error.couldNotCheck ? EXIT.network : EXIT.failed,
      line: `hashproof: ${message}${suffix}`,
    };
  }
  if (isFileError(error)) return { code: EXIT.usage, line: `hashproof: ${message}` };
  if (error instanceof SyntaxError) return { code: EXIT.failed, line: `hashproof: ${message}` };
  // A signing key file open to others (`hashproof keys`, `backup`): it names the file and the chmod.
  if (error instanceof KeyFileModeError) return { code: EXIT.failed, line: `hashproof: ${message}` };
  return { code: EXIT.failed, line: `hashproof: unexpected error: ${message}` };
}

main(process.argv.slice(2)).then(
  (code) => {
    if (process.env.HASHPROOF_REPORT_MAX_RSS)
      process.stderr.write(`maxRSS ${process.resourceUsage().maxRSS}\n`);
    process.exitCode = code;
  },
  (error: unknown) => {
    const { code, line } = exitOf(error);
    process.stderr.write(`${line}\n`);
    if (process.env.HASHPROOF_REPORT_MAX_RSS)
      process.stderr.write(`maxRSS ${process.resourceUsage().maxRSS}\n`);
    process.exitCode = code;
  },
);
