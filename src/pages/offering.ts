import type { Config } from '../config.ts';
import { NotarizeBody, SearchQuery } from '../proofs/proof-schemas.ts';
import {
  BATCH_MAX_BYTES,
  BATCH_MAX_ITEMS,
  ITEMS_PER_REQUEST,
  METADATA_MAX_BYTES,
} from '../proofs/proofs-service.ts';
import type { Static } from 'typebox';
import type { Limits as LimitsSchema, PaymentTerms } from './document-schemas.ts';

/**
 * What the service offers, derived from the configuration and the request schemas only, so every page
 * and document states the same figures as the code that enforces them (no number is written twice).
 */

/** The payment terms of the proof operation not taken from the configuration (docs/decisions.md §8). */
export const X402_VERSION = 2;
const X402_SCHEME = 'exact';

/** Names of the CAIP-2 networks an operator is likely to set; any other id is shown as it is. */
const NETWORK_NAMES: Record<string, string> = {
  'eip155:8453': 'Base',
  'eip155:84532': 'Base Sepolia',
};

/** The payment fields of what costs nothing: the terms of demo mode, and of every free listing. */
export const UNPAID = {
  price: null,
  amount: null,
  currency: null,
  protocol: null,
  x402Version: null,
  scheme: null,
  network: null,
  payTo: null,
};

export function paymentTerms(config: Config): PaymentTerms {
  const discoveryUrl = absoluteUrl(config, '/.well-known/x402');
  const x402 = config.paymentMode === 'x402' ? config.x402 : undefined;
  if (x402 === undefined) {
    return { mode: 'demo', required: false, ...UNPAID, networkName: null, discoveryUrl };
  }
  return {
    mode: 'x402',
    required: true,
    price: x402.price,
    amount: x402.price.replace(/^\$/, ''),
    currency: 'USD',
    protocol: 'x402',
    x402Version: X402_VERSION,
    scheme: X402_SCHEME,
    network: x402.network,
    networkName: NETWORK_NAMES[x402.network] ?? x402.network,
    payTo: x402.payTo,
    discoveryUrl,
  };
}

/** For sentences: "$0.005 per proof, paid with x402 (USDC on Base)" or "free (this instance runs in demo mode)". */
export function priceSentence(terms: PaymentTerms): string {
  return terms.required
    ? `${terms.price} per proof, paid with x402 (USDC on ${terms.networkName})`
    : 'free (this instance runs in demo mode, without payment)';
}

export type Limits = Static<typeof LimitsSchema>;

export function limits(config: Config, bodyMaxBytes: number): Limits {
  return {
    labelMaxLength: keyword(NotarizeBody, 'label', 'maxLength'),
    idempotencyKeyMaxLength: keyword(NotarizeBody, 'idempotencyKey', 'maxLength'),
    metadataMaxBytes: METADATA_MAX_BYTES,
    bodyMaxBytes,
    searchLimitMax: keyword(SearchQuery, 'limit', 'maximum'),
    searchLimitDefault: keyword(SearchQuery, 'limit', 'default'),
    batch: { maxItems: BATCH_MAX_ITEMS, maxBytes: BATCH_MAX_BYTES, itemsPerRequest: ITEMS_PER_REQUEST },
    rateLimit:
      config.rateLimit.max > 0
        ? { max: config.rateLimit.max, windowSeconds: Math.ceil(config.rateLimit.windowMs / 1000) }
        : null,
  };
}

/** A numeric keyword of one property of a request schema (the types do not carry the options). */
function keyword(schema: object, property: string, name: string): number {
  const properties = (schema as { properties: Record<string, Record<string, unknown>> }).properties;
  const value = properties[property]?.[name];
  if (typeof value !== 'number') throw new Error(`schema has no ${property}.${name}`);
  return value;
}

/** Every absolute URL the service publishes is built here, from PUBLIC_BASE_URL. */
export function absoluteUrl(config: Config, path: string): string {
  return config.publicBaseUrl + path;
}

interface SitePage {
  path: string;
  /** The name in navigation and link lists. */
  name: string;
  description: string;
}

/** The public HTML pages besides the proof pages, in the order they are listed (nav, sitemap, llms.txt). */
export const SITE_PAGES: readonly SitePage[] = [
  { path: '/', name: 'Home', description: 'What hashproof does, in one screen.' },
  {
    path: '/demo',
    name: 'Demo',
    description: 'Hash a file in your browser (it never leaves your machine) and create a proof of it.',
  },
  { path: '/proofs', name: 'Proofs', description: 'Recent public proofs, and search by hash, id or label.' },
  {
    path: '/dashboard',
    name: 'Dashboard',
    description: 'Live figures: proofs today and in total, by payment mode, and recent activity.',
  },
  {
    path: '/agents',
    name: 'Agents',
    description: 'How a program or an AI agent uses the service without a human.',
  },
  { path: '/pricing', name: 'Pricing', description: 'What a proof costs and what is free.' },
  {
    path: '/actions',
    name: 'Actions',
    description: 'Action templates a tool-using agent can fill in and call.',
  },
  {
    path: '/trust',
    name: 'Trust',
    description: 'What a proof proves, how it is signed, and what the service keeps.',
  },
  { path: '/marketplace', name: 'Marketplace', description: "The service's offerings and their terms." },
];
