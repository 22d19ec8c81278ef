#!/usr/bin/env node
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { PrivateKeyAccount } from 'viem/accounts';
import {
  createClient,
  hashFile,
  DEFAULT_TIMEOUT_MS,
  HashproofError,
  KeyManifestChangedError,
  LogCheckError,
  LogUncheckedError,
  type HashproofClient,
  type Proof,
  type ManifestKey,
} from '../client/client.ts';
import { serve } from './serve.ts';
import { stampFiles } from './stamp.ts';
import { escapeControl, EXIT, NotVerifiedError, print, printJson, printSafe, UsageError } from './output.ts';
import { onlineKeys } from './trusted-keys.ts';
import { verify } from './verify.ts';
import { HELP } from './help.ts';
import { backup, restore } from './backup.ts';
import { monitor } from './monitor.ts';
import { keys } from './keys.ts';
import { LABEL_MAX_LENGTH, SINGLE_LINE_PATTERN } from '../core/field-rules.ts';

const OPTIONS = {
  url: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  label: { type: 'string' },
  metadata: { type: 'string', multiple: true },
  out: { type: 'string' },
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

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (command === undefined || (values.help && !(command in HELP))) return (print(HELP.main!), EXIT.ok);
  if (values.help) return (print(HELP[command]!), EXIT.ok);
  const baseUrl = values.url ?? process.env.HASHPROOF_URL ?? 'http://127.0.0.1:8080';
  if (!/^https?:\/\//.test(baseUrl) || !URL.canParse(baseUrl))
    throw new UsageError(
      `${values.url === undefined ? 'HASHPROOF_URL' : '--url'} must be the service's http(s) address, as in http://127.0.0.1:8080; got "${baseUrl}"`,
    );
  const client = createClient({
    baseUrl,
    apiKey: values['api-key'] ?? process.env.HASHPROOF_API_KEY,
    adminKey: process.env.SERVICE_ADMIN_KEY,
    payer: await walletFromEnvironment(),
    timeoutMs: timeoutOf(values.timeout),
  });
  switch (command) {
    case 'stamp':
      return stamp(client, rest, values);
    case 'verify':
      return verify(client, rest, values, timeoutOf(values.timeout));
    case 'show':
      return show(client, rest, values);
    case 'search':
      return search(client, values);
    case 'admin':
      return admin(client, rest, values);
    case 'backup':
      return backup(values);
    case 'restore':
      return restore(values);
    case 'monitor':
      return monitor(client, values, () => keysOf(client));
    case 'keys':
      return keys(rest, {
        keysDir: values['keys-dir'],
        publicBaseUrl: values['public-base-url'],
        activateIn: values['activate-in'],
        out: values.out,
        json: values.json,
      });
    case 'serve':
      return serve({ port: values.port, database: values.database, mode: values.mode });
    default:
      throw new UsageError(`unknown command ${command}; see hashproof --help`);
  }
}

async function stamp(client: HashproofClient, paths: string[], values: Values): Promise<number> {
  if (paths.length === 0) throw new UsageError('stamp needs at least one file, directory or -');
  const metadata = parseMetadata(values.metadata ?? []);
  const files: string[] = [];
  for (const named of paths) files.push(...(named === '-' ? ['-'] : await listFiles(named)));
  if (values.out && files.length !== 1) throw new UsageError('--out works with a single input');
  if (files.includes('-') && files.length > 1)
    throw new UsageError(
      'stamp - takes no other inputs (its proof file goes to standard output, or to --out)',
    );
  if (values.label !== undefined) checkLabel(values.label);
  const results = await stampFiles(client, files, {
    label: values.label,
    metadata,
    out: values.out,
    json: values.json,
    keys: () => keysOf(client),
    print,
  });
  if (values.json) printJson(results.length === 1 ? results[0] : results);
  return EXIT.ok;
}

async function show(client: HashproofClient, [ref]: string[], values: Values): Promise<number> {
  const id = ref?.match(/proof_[0-9A-HJKMNP-TV-Z]{26}/)?.[0];
  if (id === undefined) throw new UsageError('show needs a proof id or proof URL');
  const { proof } = await client.getProof(id);
  if (values.json) printJson(proof);
  else print(describe(proof));
  return EXIT.ok;
}

async function search(client: HashproofClient, values: Values): Promise<number> {
  const contentHash = values.file ? await hashFile(values.file) : values['content-hash'];
  const page = await client.search({
    q: values.q,
    contentHash,
    accountId: values.account,
    limit: values.limit === undefined ? undefined : Number(values.limit),
  });
  if (values.json) printJson(page);
  else
    for (const proof of page.proofs)
      printSafe(`${proof.id}  ${proof.timestamp}  ${proof.contentHash}  ${proof.label}`);
  return EXIT.ok;
}

async function admin(
  client: HashproofClient,
  [area, action, arg]: string[],
  values: Values,
): Promise<number> {
  if (!process.env.SERVICE_ADMIN_KEY) throw new UsageError('set SERVICE_ADMIN_KEY to the administrator key');
  const need = (what: string) => {
    if (arg === undefined) throw new UsageError(`admin ${area} ${action} needs ${what}`);
    return arg;
  };
  const a = client.admin;
  const run: Record<string, () => Promise<unknown>> = {
    'accounts list': () => a.listAccounts(),
    'accounts create': () =>
      a.createAccount({
        ...(values.name ? { name: values.name } : {}),
        ...(values.owner ? { ownerLabel: values.owner } : {}),
      }),
    'keys list': () => a.listApiKeys(need('an account id')),
    'keys create': () => a.createApiKey(need('an account id'), values.name ? { name: values.name } : {}),
    'keys revoke': () => a.revokeApiKey(need('a key id')),
    'webhooks list': () => a.listWebhooks(need('an account id')),
    'webhooks create': () => {
      if (!values['webhook-url']) throw new UsageError('admin webhooks create needs --webhook-url');
      return a.createWebhook(need('an account id'), {
        url: values['webhook-url'],
        ...(values.events ? { events: values.events.split(',') } : {}),
        ...(values.name ? { name: values.name } : {}),
      });
    },
    'webhooks test': () => a.testWebhook(need('a webhook id')),
  };
  const operation = run[`${area} ${action}`];
  if (operation === undefined) throw new UsageError(HELP.admin);
  printJson(await operation());
  return EXIT.ok;
}

let cachedKeys: Promise<ManifestKey[]> | undefined;
/** The service's keys, checked against (and remembered as) the keys trusted for it: once per command. */
function keysOf(client: HashproofClient): Promise<ManifestKey[]> {
  cachedKeys ??= onlineKeys(client).then((trusted) => trusted.keys);
  return cachedKeys;
}

/** The service's rule for a label (1 to 120 characters, one line), told before any file is hashed. */
function checkLabel(label: string): void {
  if (label === '') throw new UsageError('--label must not be empty');
  if (!new RegExp(SINGLE_LINE_PATTERN).test(label))
    throw new UsageError('--label must be one line only (no line breaks, tabs or other control characters)');
  const length = [...label].length;
  if (length > LABEL_MAX_LENGTH)
    throw new UsageError(`--label is ${length} characters long; at most ${LABEL_MAX_LENGTH}`);
}

function parseMetadata(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--metadata takes key=value, got ${JSON.stringify(pair)}`);
    metadata[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return metadata;
}

async function listFiles(input: string): Promise<string[]> {
  let info;
  try {
    info = await stat(input);
  } catch {
    throw new UsageError(`no such file or directory: ${input}`);
  }
  if (info.isFile()) return [input];
  if (!info.isDirectory())
    throw new UsageError(
      `${input} is not a regular file or a directory: stamp a file, a directory or - (standard input)`,
    );
  const entries = await readdir(input, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.endsWith('.proof.json'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/** A proof as `show` prints it: each field from the service with its control characters escaped. */
function describe(proof: Proof): string {
  const keys = Array.isArray(proof.metadataKeys) ? proof.metadataKeys.join(', ') : '';
  return [
    ['id         ', proof.id],
    ['timestamp  ', proof.timestamp],
    ['label      ', proof.label],
    ['contentHash', proof.contentHash],
    ['metadata   ', `${proof.metadataHash} (keys: ${keys || 'none'})`],
    ['verified   ', proof.verified],
    ['signature  ', `${proof.signature} (key ${proof.keyId})`],
  ]
    .map(([name, value]) => `${name} ${escapeControl(String(value))}`)
    .join('\n');
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
  if (error instanceof Error && error.name === 'KeyFileModeError')
    return { code: EXIT.failed, line: `hashproof: ${message}` };
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
