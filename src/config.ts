import path from 'node:path';
import { parseCosignerKey } from './core/cosignature.ts';

type PaymentMode = 'demo' | 'x402';

export type DatabaseConfig = { engine: 'sqlite'; path: string } | { engine: 'postgres'; url: string };

export interface X402Config {
  payTo: string;
  facilitatorUrl: string;
  network: string;
  price: string;
  /** How long one facilitator call (verify, settle, supported) may take before it counts as an outage. */
  facilitatorTimeoutMs: number;
  /** A Coinbase Developer Platform API key: each facilitator call then carries its signed JWT. */
  cdpApiKey: { id: string; secret: string } | undefined;
}

/** Coinbase's facilitator, the one that settles on Base mainnet (it needs a CDP API key). */
const CDP_FACILITATOR_URL = 'https://api.cdp.coinbase.com/platform/v2/x402';

/**
 * The service's whole configuration, read once from the environment and frozen (docs/deploy.md,
 * "Configuration").
 */
export interface Config {
  host: string;
  port: number;
  database: DatabaseConfig;
  /** The directory that holds the embedded database and, by default, the signing keys. */
  dataDir: string;
  redisUrl: string | undefined;
  /** Prefix of every key the service writes to Redis, so deployments can share one Redis. */
  redisKeyPrefix: string;
  publicBaseUrl: string;
  adminKey: string | undefined;
  paymentMode: PaymentMode;
  x402: X402Config | undefined;
  rateLimit: { max: number; windowMs: number };
  /** How long a client may take to send a whole request (headers and body) before it is cut off with 408. */
  requestTimeoutMs: number;
  signingKeysDir: string;
  /**
   * Where the record of the latest checkpoint the log published is kept, outside the database
   * (docs/deploy.md, "Restoring a backup"): SIGNING_KEYS_DIR unless LOG_STATE_DIR names another.
   */
  logStateDir: string;
  webhookAllowPrivateUrls: boolean;
  trustProxy: string[] | undefined;
  logLevel: string;
  /** The RFC 9116 Contact URI of SECURITY_CONTACT (a bare address made mailto:); undefined: none. */
  securityContact: string | undefined;
  /** A port of its own for GET /metrics without a key (same HOST); undefined: only on the main port. */
  metricsPort: number | undefined;
  /** Outside anchors of the log's checkpoints (docs/deploy.md, "Anchors"); both lists empty: none. */
  anchors: AnchorConfig;
  /** Witnesses asked to cosign the log's checkpoints (docs/witnesses.md); an empty list: none. */
  witnesses: WitnessConfig;
}

/** One witness (C2SP tlog-witness): its verifier key and the URL prefix of its `add-checkpoint`. */
export interface WitnessEndpoint {
  /** `<name>+<hex key id>+<base64(0x04 ‖ Ed25519 public key)>` (C2SP tlog-cosignature v1). */
  vkey: string;
  /** The submission prefix, as configured (credentials, if any, are used and never shown). */
  url: string;
}

export interface WitnessConfig {
  witnesses: WitnessEndpoint[];
  /** Each witness is sent a new checkpoint at most this often. */
  intervalMs: number;
  /** Loopback, private and link-local witness addresses are allowed (tests). */
  allowPrivateUrls: boolean;
}

export interface AnchorConfig {
  /** RFC 3161 time-stamping authorities (HTTP POST `application/timestamp-query`). */
  tsaUrls: string[];
  /** OpenTimestamps calendar base URLs. */
  otsCalendars: string[];
  /** The newest checkpoint is anchored at most this often, when the tree grew since the last anchor. */
  intervalMs: number;
  /** Loopback, private and link-local authorities, calendars and header servers are allowed (tests). */
  allowPrivateUrls: boolean;
  /** An Esplora-compatible API that Bitcoin block headers are checked against; undefined: claims stay unchecked. */
  bitcoinHeadersUrl: string | undefined;
}

/** Thrown with one line per bad variable, each naming the variable and what is wrong. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === '' ? undefined : value;
  };
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(`${name}: must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const boolean = (name: string): boolean => {
    const raw = read(name);
    if (raw === undefined) return false;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    problems.push(`${name}: must be true or false, got "${raw}"`);
    return false;
  };

  const host = read('HOST') ?? '127.0.0.1';
  const port = integer('PORT', 8080, 0, 65535);

  const databaseUrl = read('DATABASE_URL') ?? 'sqlite:./data/hashproof.db';
  let database: DatabaseConfig = { engine: 'sqlite', path: path.resolve('data/hashproof.db') };
  if (databaseUrl.startsWith('sqlite:')) {
    const file = databaseUrl.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (file === '')
      problems.push('DATABASE_URL: sqlite: needs a file path, as in sqlite:./data/hashproof.db');
    else database = { engine: 'sqlite', path: file === ':memory:' ? file : path.resolve(file) };
  } else if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    database = { engine: 'postgres', url: databaseUrl };
  } else {
    problems.push('DATABASE_URL: must start with sqlite: or postgres://');
  }
  const dataDir =
    database.engine === 'sqlite' && database.path !== ':memory:'
      ? path.dirname(database.path)
      : path.resolve('data');

  let publicBaseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const base = read('PUBLIC_BASE_URL');
  if (base !== undefined) {
    try {
      const url = new URL(base);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
      if (url.search || url.hash) throw new Error('query');
      publicBaseUrl = url.origin + url.pathname.replace(/\/+$/, '');
    } catch {
      problems.push(`PUBLIC_BASE_URL: must be an absolute http(s) URL without query, got "${base}"`);
    }
  }

  const paymentModeRaw = read('PAYMENT_MODE') ?? 'demo';
  let paymentMode: PaymentMode = 'demo';
  if (paymentModeRaw === 'demo' || paymentModeRaw === 'x402') paymentMode = paymentModeRaw;
  else problems.push(`PAYMENT_MODE: must be demo or x402, got "${paymentModeRaw}"`);

  let x402: X402Config | undefined;
  if (paymentMode === 'x402') {
    const payTo = read('X402_PAY_TO');
    const cdpId = read('CDP_API_KEY_ID');
    const cdpSecret = read('CDP_API_KEY_SECRET');
    if ((cdpId === undefined) !== (cdpSecret === undefined))
      problems.push('CDP_API_KEY_ID / CDP_API_KEY_SECRET: set both or neither');
    const cdpApiKey =
      cdpId !== undefined && cdpSecret !== undefined ? { id: cdpId, secret: cdpSecret } : undefined;
    // With a CDP key and no facilitator named, the facilitator is Coinbase's.
    const facilitatorUrl = read('X402_FACILITATOR_URL') ?? (cdpApiKey ? CDP_FACILITATOR_URL : undefined);
    if (payTo === undefined) problems.push('X402_PAY_TO: required when PAYMENT_MODE=x402 (the address paid)');
    else if (!EVM_ADDRESS.test(payTo))
      problems.push(`X402_PAY_TO: must be a 0x-prefixed 20-byte address, got "${payTo}"`);
    if (facilitatorUrl === undefined)
      problems.push(
        'X402_FACILITATOR_URL: required when PAYMENT_MODE=x402 (or set CDP_API_KEY_ID and CDP_API_KEY_SECRET)',
      );
    else if (!URL.canParse(facilitatorUrl))
      problems.push(`X402_FACILITATOR_URL: not a URL: "${facilitatorUrl}"`);
    const price = read('X402_PRICE') ?? '$0.005';
    if (!/^\$\d+(\.\d{1,6})?$/.test(price))
      problems.push(`X402_PRICE: must look like $0.005, got "${price}"`);
    const network = read('X402_NETWORK') ?? 'eip155:8453';
    if (!/^eip155:\d{1,12}$/.test(network))
      problems.push(`X402_NETWORK: must be an EVM CAIP-2 id such as eip155:8453, got "${network}"`);
    x402 = {
      payTo: payTo ?? '',
      facilitatorUrl: (facilitatorUrl ?? '').replace(/\/+$/, ''),
      network,
      price,
      facilitatorTimeoutMs: integer('X402_FACILITATOR_TIMEOUT_MS', 30_000, 100, 600_000),
      cdpApiKey,
    };
  }

  const trustProxyRaw = read('TRUST_PROXY');
  let trustProxy: string[] | undefined;
  if (trustProxyRaw !== undefined) {
    trustProxy = trustProxyRaw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    if (trustProxy.some((entry) => /^\d+$/.test(entry))) {
      problems.push('TRUST_PROXY: takes IP addresses or CIDR ranges; a hop count is not supported');
    }
  }

  const logLevel = read('LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')}`);

  const urlList = (name: string): string[] => {
    const urls = (read(name) ?? '')
      .split(',')
      .map((s) => s.trim().replace(/\/+$/, ''))
      .filter(Boolean);
    for (const url of urls) {
      if (!/^https?:\/\//.test(url) || !URL.canParse(url))
        problems.push(`${name}: each entry must be an http(s) URL, got "${url}"`);
    }
    return [...new Set(urls)];
  };
  const headerServers = urlList('BITCOIN_HEADERS_URL');
  if (headerServers.length > 1) problems.push('BITCOIN_HEADERS_URL: takes one URL');
  const anchors: AnchorConfig = {
    tsaUrls: urlList('ANCHOR_TSA_URLS'),
    otsCalendars: urlList('ANCHOR_OTS_CALENDARS'),
    intervalMs: integer('ANCHOR_INTERVAL_MS', 60_000, 10, 86_400_000),
    allowPrivateUrls: boolean('ANCHOR_ALLOW_PRIVATE_URLS'),
    bitcoinHeadersUrl: headerServers[0],
  };

  const witnesses: WitnessConfig = {
    witnesses: witnessList(read('WITNESSES'), problems),
    intervalMs: integer('WITNESS_INTERVAL_MS', 1_000, 10, 86_400_000),
    allowPrivateUrls: boolean('WITNESS_ALLOW_PRIVATE_URLS'),
  };

  const adminKey = read('SERVICE_ADMIN_KEY');
  if (adminKey !== undefined && adminKey.length < 16) {
    problems.push('SERVICE_ADMIN_KEY: must be at least 16 characters');
  }

  const signingKeysDir = path.resolve(read('SIGNING_KEYS_DIR') ?? path.join(dataDir, 'keys'));
  const config: Config = {
    host,
    port,
    database,
    dataDir,
    redisUrl: read('REDIS_URL'),
    redisKeyPrefix: read('REDIS_KEY_PREFIX') ?? 'hashproof:',
    publicBaseUrl,
    adminKey,
    paymentMode,
    x402,
    rateLimit: {
      max: integer('RATE_LIMIT_MAX', 60, 0, 1_000_000),
      windowMs: integer('RATE_LIMIT_WINDOW_MS', 60_000, 1, 86_400_000),
    },
    requestTimeoutMs: integer('REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    signingKeysDir,
    logStateDir: path.resolve(read('LOG_STATE_DIR') ?? signingKeysDir),
    webhookAllowPrivateUrls: boolean('WEBHOOK_ALLOW_PRIVATE_URLS'),
    trustProxy,
    logLevel,
    securityContact: contactUri(read('SECURITY_CONTACT')),
    anchors,
    witnesses,
    metricsPort: read('METRICS_PORT') === undefined ? undefined : integer('METRICS_PORT', 0, 0, 65535),
  };
  if (config.redisUrl !== undefined && !/^rediss?:\/\//.test(config.redisUrl)) {
    problems.push('REDIS_URL: must start with redis:// or rediss://');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/**
 * WITNESSES: comma-separated `<verifier key>@<url>`. A key name may hold `@` (and no `+`), so the key
 * ends at the first `@http://` or `@https://` after its second `+`. One problem line for the variable.
 */
function witnessList(raw: string | undefined, problems: string[]): WitnessEndpoint[] {
  const found: WitnessEndpoint[] = [];
  const bad: string[] = [];
  const entries = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const afterId = entry.indexOf('+', entry.indexOf('+') + 1);
    const at = afterId < 0 ? -1 : entry.slice(afterId).search(/@https?:\/\//);
    if (at < 0) {
      bad.push(`entry ${i + 1} is not <verifier key>@<http(s) URL>`);
      continue;
    }
    const vkey = entry.slice(0, afterId + at);
    const url = entry.slice(afterId + at + 1).replace(/\/+$/, '');
    try {
      parseCosignerKey(vkey);
    } catch (error) {
      bad.push(`"${vkey}": ${(error as Error).message}`);
      continue;
    }
    if (!URL.canParse(url)) bad.push(`the URL of "${vkey}" does not parse`);
    else if (found.some((w) => w.vkey === vkey)) bad.push(`"${vkey}" is listed twice`);
    else found.push({ vkey, url });
  }
  if (bad.length > 0) problems.push(`WITNESSES: ${bad.join('; ')}`);
  return found;
}

/**
 * SECURITY_CONTACT as a Contact URI: its first line, a bare e-mail address made `mailto:`. Unset stays
 * unset: an address made up from the public host could reach no one (docs/decisions.md).
 */
function contactUri(value: string | undefined): string | undefined {
  const configured = value?.split(/[\r\n]/)[0]?.trim();
  if (!configured) return undefined;
  if (!/^[a-z][a-z0-9+.-]*:/i.test(configured) && configured.includes('@')) return `mailto:${configured}`;
  return configured;
}
