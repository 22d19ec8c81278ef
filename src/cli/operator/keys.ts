import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import type { Config } from '../../config.ts';
import { formatVerifierKey } from '../../core/signed-note.ts';
import { keyManifest, readHmacKeys, readLogKey, readReceiptKeys } from '../../keys/key-directory.ts';
import { Keyring } from '../../keys/keyring.ts';
import { logOrigin } from '../../log/log-service.ts';
import { Tsa } from '../../tsa/tsa.ts';
import { EXIT, print, UsageError } from '../output.ts';
import { serviceConfig } from './service-config.ts';

/** The options of `hashproof keys`. */
export interface KeysOptions {
  keysDir?: string;
  publicBaseUrl?: string;
  activateIn?: string;
  out?: string;
  json?: boolean;
}

type Use = 'hmac' | 'receipt' | 'log' | 'tsa';

/** One key as `keys list` shows it. */
interface ListedKey {
  use: Use;
  keyId: string;
  algorithm: string;
  validFrom: string;
  validUntil: string | null;
  /** Signs now; a retired key only verifies, a pending one signs from its validFrom. */
  active: boolean;
  status: 'active' | 'retired' | 'pending';
}

/**
 * `hashproof keys <init|list|rotate|export-public>`: the service's signing keys, in SIGNING_KEYS_DIR (or
 * --keys-dir), worked on as files without a running service (docs/operations.md).
 */
export async function keys([action, ...extra]: string[], options: KeysOptions): Promise<number> {
  if (extra.length > 0) throw new UsageError(`keys ${action} takes no arguments, got ${extra.join(' ')}`);
  const config = configOf(options);
  const dir = config.signingKeysDir;
  switch (action) {
    case 'init':
      return init(config, options);
    case 'list':
      return list(dir, options);
    case 'rotate':
      return rotate(dir, options);
    case 'export-public':
      return exportPublic(config, options);
    default:
      throw new UsageError(
        'keys needs an action: init, list, rotate or export-public (see hashproof keys --help)',
      );
  }
}

/** The service's own configuration (docs/deploy.md), with the directory and URL the options name. */
function configOf(options: KeysOptions): Config {
  return serviceConfig({ SIGNING_KEYS_DIR: options.keysDir, PUBLIC_BASE_URL: options.publicBaseUrl });
}

/** Every key the service needs, made the way its first start makes them; an existing key is kept. */
async function init(config: Config, options: KeysOptions): Promise<number> {
  const dir = config.signingKeysDir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
  const before = new Set(listed(dir).map((key) => key.keyId));
  const keyring = Keyring.open(dir);
  void keyring.logKey;
  await Tsa.open(dir, new URL(config.publicBaseUrl).host);
  const now = listed(dir);
  const created = now.filter((key) => !before.has(key.keyId));
  const present = now.filter((key) => before.has(key.keyId));
  if (options.json) print(JSON.stringify({ dir, created, present }, null, 2));
  else {
    print(`keys directory ${dir} (mode 0700)`);
    for (const key of created) print(`created  ${key.use.padEnd(8)} ${key.keyId}`);
    for (const key of present) print(`present  ${key.use.padEnd(8)} ${key.keyId}  (kept as it was)`);
    if (created.length === 0) print('nothing to create: every key was there');
  }
  return EXIT.ok;
}

async function list(dir: string, options: KeysOptions): Promise<number> {
  const keys = listed(dir);
  const missing = (['hmac', 'receipt', 'log', 'tsa'] as const).filter(
    (use) => !keys.some((k) => k.use === use),
  );
  if (options.json) print(JSON.stringify({ dir, keys, missing }, null, 2));
  else {
    for (const key of keys)
      print(
        [
          key.use.padEnd(8),
          key.keyId.padEnd(24),
          key.algorithm.padEnd(11),
          key.validFrom,
          key.validUntil ?? '-'.padEnd(24),
          key.status,
        ].join('  '),
      );
    if (missing.length > 0) print(`missing: ${missing.join(', ')} (hashproof keys init creates them)`);
  }
  return missing.length === 0 ? EXIT.ok : EXIT.failed;
}

/** New HMAC and receipt keys that take over at a time still to come, so every instance can learn them. */
async function rotate(dir: string, options: KeysOptions): Promise<number> {
  const delayMs = duration(options.activateIn ?? '5m');
  const keyring = loaded(dir);
  const from = new Date(Date.now() + delayMs);
  const added = keyring.rotate(from);
  const tsa = Tsa.load(dir);
  const result = {
    dir,
    validFrom: from.toISOString(),
    hmac: added.hmac.keyId,
    receipt: added.receipt.keyId,
    notRotated: {
      log: 'one key for the life of the log: verifiers pin it',
      tsa:
        tsa === undefined
          ? 'none yet'
          : `its certificate is kept, valid until ${new Date(tsa.certificate.validTo).toISOString()}`,
    },
  };
  if (options.json) print(JSON.stringify(result, null, 2));
  else
    print(
      [
        `new keys ${added.hmac.keyId} and ${added.receipt.keyId} sign from ${result.validFrom}; the old keys`,
        'stay to verify what they signed.',
        `Not rotated: the log key (${result.notRotated.log}); the TSA (${result.notRotated.tsa}).`,
        `Before ${result.validFrom}: copy the new files to every instance's SIGNING_KEYS_DIR, send each`,
        'instance SIGHUP (or restart it), and publish the new manifest (hashproof keys export-public).',
      ].join('\n'),
    );
  return EXIT.ok;
}

/** The public key manifest, as GET /.well-known/hashproof-keys.json serves it for this directory. */
async function exportPublic(config: Config, options: KeysOptions): Promise<number> {
  const dir = config.signingKeysDir;
  const keyring = loaded(dir);
  const logKey = readLogKey(dir, false);
  const tsa = Tsa.load(dir);
  if (logKey === undefined || tsa === undefined)
    throw new UsageError(
      `${dir} has no ${logKey === undefined ? 'log key' : 'TSA'}; run hashproof keys init`,
    );
  const manifest = keyManifest({
    service: config.publicBaseUrl,
    receiptKeys: keyring.receiptKeys(),
    logKey,
    logVerifierKey: formatVerifierKey(logOrigin(config.publicBaseUrl), logKey.publicKey),
    tsa,
  });
  const text = JSON.stringify(manifest, null, 2) + '\n';
  if (options.out === undefined) process.stdout.write(text);
  else writeFileSync(options.out, text);
  return EXIT.ok;
}

function loaded(dir: string): Keyring {
  try {
    return Keyring.load(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new UsageError(`no keys directory ${dir}; run hashproof keys init`);
    if (error instanceof Error && error.message.startsWith('no ')) throw new UsageError(error.message);
    throw error;
  }
}

/** Every key of the directory, HMAC and receipt keys oldest first, then the log key and the TSA. */
function listed(dir: string): ListedKey[] {
  let hmac, receipt;
  try {
    [hmac, receipt] = [readHmacKeys(dir), readReceiptKeys(dir)];
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const now = new Date().toISOString();
  const windowed = (
    use: Use,
    algorithm: string,
    key: { keyId: string; createdAt: string; validUntil: string | null },
  ): ListedKey => {
    const status =
      key.createdAt > now
        ? 'pending'
        : key.validUntil !== null && key.validUntil <= now
          ? 'retired'
          : 'active';
    return {
      use,
      keyId: key.keyId,
      algorithm,
      validFrom: key.createdAt,
      validUntil: key.validUntil,
      active: status === 'active',
      status,
    };
  };
  const keys = [
    ...hmac.map((k) => windowed('hmac', 'HMAC-SHA256', k)),
    ...receipt.map((k) => windowed('receipt', 'Ed25519', k)),
  ];
  const logKey = readLogKey(dir, false);
  if (logKey !== undefined) keys.push(windowed('log', 'Ed25519', { ...logKey, validUntil: null }));
  const tsa = Tsa.load(dir);
  if (tsa !== undefined)
    keys.push(
      windowed('tsa', 'ECDSA-P256', {
        keyId: tsa.keyId,
        createdAt: new Date(tsa.certificate.validFrom).toISOString(),
        validUntil: null,
      }),
    );
  return keys;
}

/** `0`, `90s`, `5m`, `1h`, `1500ms`. */
function duration(text: string): number {
  const match = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null || (match[2] === undefined && match[1] !== '0'))
    throw new UsageError(`--activate-in takes a duration such as 30s, 5m or 1h, got ${JSON.stringify(text)}`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[match[2] ?? 'ms'] ?? 1;
  return Number(match[1]) * unit;
}
