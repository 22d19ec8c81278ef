#!/usr/bin/env node
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { PrivateKeyAccount } from 'viem/accounts';
import {
  createClient,
  hashFile,
  HashproofError,
  LogCheckError,
  type HashproofClient,
  type Proof,
  type PublicKeyEntry,
  type ManifestKey,
} from '../client/client.ts';
import { serve } from './serve.ts';
import { stampFiles } from './stamp.ts';
import { EXIT, print, UsageError } from './output.ts';
import { verify } from './verify.ts';
import { monitor, MONITOR_HELP } from './monitor.ts';

const HELP: Record<string, string> = {
  main: `hashproof: timestamped proofs of SHA-256 hashes

Usage: hashproof <command> [options]

Commands:
  stamp <file|dir|->…     hash files locally and create one proof per file (writes <file>.proof.json)
  verify <file> [proof]   check a file against its proof (offline; --online also asks the service)
  show <proof-id|url>     print a proof
  search [options]        find proofs (--q, --content-hash, --file, --account, --limit)
  admin <area> <action>   accounts, keys and webhooks (needs SERVICE_ADMIN_KEY)
  serve                   run the service (--port, --database, --mode)
  monitor                 follow the service's log: signatures, consistency, entries against tiles

Common options: --url (or HASHPROOF_URL, default http://127.0.0.1:8080), --json, --help
Exit codes: 0 success, 1 a check or request failed, 2 usage error, 3 the service cannot be reached

stamp, verify --online and monitor remember the largest checkpoint of each log they verified (in
HASHPROOF_STATE_DIR, default $XDG_STATE_HOME/hashproof or ~/.local/state/hashproof) and exit 1 with
"log fork detected: …" when the log serves one that does not extend it.`,
  stamp: `Usage: hashproof stamp <file|dir|->… [--label L] [--metadata key=value]… [--out F] [--api-key K] [--json]

Hashes each file as a stream and creates its proof. The idempotency key is derived from the hash and the
label, so running the command again never creates (or pays for) a second proof. A directory is stamped
file by file (recursively, skipping *.proof.json); - reads standard input. Writes <file>.proof.json
beside each file, or --out for a single input. The API key comes from --api-key or HASHPROOF_API_KEY.
On a terminal, many files (or one over 64 MiB) show their progress on standard error.`,
  verify: `Usage: hashproof verify <file> [proof.json] [--keys manifest.json] [--online] [--json]

Checks, offline: the file's SHA-256 is the proof's contentHash, the proof is well formed, the Ed25519
receipt verifies, the RFC 3161 token names this hash and time, and the log's inclusion proof leads to
a signed checkpoint. --keys names a copy of the service's /.well-known/hashproof-keys.json kept apart
from the proof: the receipt, TSA and log keys must then be those. --online also asks the service to
check the HMAC signature (and uses its key manifest). Exit 0 only when no check fails; each check is
printed with its result.`,
  show: 'Usage: hashproof show <proof-id|proof-url> [--json]',
  search:
    'Usage: hashproof search [--q TEXT] [--content-hash H] [--file F] [--account ID] [--limit N] [--json]',
  admin: `Usage: hashproof admin <area> <action> [args] (admin key from SERVICE_ADMIN_KEY)
  admin accounts list | create [--name N] [--owner O]
  admin keys list <account-id> | create <account-id> [--name N] | revoke <key-id>
  admin webhooks list <account-id> | create <account-id> --webhook-url U [--events a,b] | test <webhook-id>`,
  serve: 'Usage: hashproof serve [--port P] [--database URL] [--mode demo|x402]  (the same as npm start)',
  monitor: MONITOR_HELP,
};

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
  'interval-ms': { type: 'string' },
} satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parse>['values'];
const parse = (args: string[]) => parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });

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
  const client = createClient({
    baseUrl: values.url ?? process.env.HASHPROOF_URL ?? 'http://127.0.0.1:8080',
    apiKey: values['api-key'] ?? process.env.HASHPROOF_API_KEY,
    adminKey: process.env.SERVICE_ADMIN_KEY,
    payer: await walletFromEnvironment(),
  });
  switch (command) {
    case 'stamp':
      return stamp(client, rest, values);
    case 'verify':
      return verify(client, rest, values, () => keysOf(client));
    case 'show':
      return show(client, rest, values);
    case 'search':
      return search(client, values);
    case 'admin':
      return admin(client, rest, values);
    case 'monitor':
      return monitor(client, values, () => keysOf(client));
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
  const results = await stampFiles(client, files, {
    label: values.label,
    metadata,
    out: values.out,
    json: values.json,
    keys: () => keysOf(client),
    print,
  });
  if (values.json) print(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
  return EXIT.ok;
}

async function show(client: HashproofClient, [ref]: string[], values: Values): Promise<number> {
  const id = ref?.match(/proof_[0-9A-HJKMNP-TV-Z]{26}/)?.[0];
  if (id === undefined) throw new UsageError('show needs a proof id or proof URL');
  const { proof } = await client.getProof(id);
  if (values.json) print(JSON.stringify(proof, null, 2));
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
  if (values.json) print(JSON.stringify(page, null, 2));
  else
    for (const proof of page.proofs)
      print(`${proof.id}  ${proof.timestamp}  ${proof.contentHash}  ${proof.label}`);
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
  print(JSON.stringify(await operation(), null, 2));
  return EXIT.ok;
}

let cachedKeys: PublicKeyEntry[] | undefined;
async function keysOf(client: HashproofClient): Promise<ManifestKey[]> {
  cachedKeys ??= (await client.keys()).keys;
  return cachedKeys;
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
  if (!info.isDirectory()) return [input];
  const entries = await readdir(input, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.endsWith('.proof.json'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

function describe(proof: Proof): string {
  return [
    `id          ${proof.id}`,
    `timestamp   ${proof.timestamp}`,
    `label       ${proof.label}`,
    `contentHash ${proof.contentHash}`,
    `metadata    ${proof.metadataHash} (keys: ${proof.metadataKeys.join(', ') || 'none'})`,
    `verified    ${proof.verified}`,
    `signature   ${proof.signature} (key ${proof.keyId})`,
  ].join('\n');
}

main(process.argv.slice(2)).then(
  (code) => {
    if (process.env.HASHPROOF_REPORT_MAX_RSS)
      process.stderr.write(`maxRSS ${process.resourceUsage().maxRSS}\n`);
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof LogCheckError) {
      // One line that says it all: `log fork detected: …` names the log and both checkpoints.
      process.stderr.write(`${error.message}\n`);
      process.exitCode = EXIT.failed;
    } else if (error instanceof UsageError) {
      process.stderr.write(`hashproof: ${error.message}\n`);
      process.exitCode = EXIT.usage;
    } else if (error instanceof HashproofError) {
      process.stderr.write(
        `hashproof: ${error.message}${error.code === 'network_error' ? '' : ` (${error.status} ${error.code})`}\n`,
      );
      process.exitCode = error.isNetworkError ? EXIT.network : EXIT.failed;
    } else if (error instanceof SyntaxError || (error as NodeJS.ErrnoException).code === 'ENOENT') {
      process.stderr.write(`hashproof: ${(error as Error).message}\n`);
      process.exitCode = EXIT.failed;
    } else {
      process.stderr.write(
        `hashproof: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exitCode = EXIT.failed;
    }
  },
);
