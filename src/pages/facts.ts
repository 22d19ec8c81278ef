import type { Static } from 'typebox';
import type { AppContext } from '../context.ts';
import { BATCH_PATH, NOTARIZE_PATH } from '../core/api-paths.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { SERVICE_VERSION } from '../version.ts';
import type { Capabilities, PaymentTerms } from './document-schemas.ts';
import { absoluteUrl, limits, paymentTerms, type Limits } from './offering.ts';

export { BATCH_PATH, NOTARIZE_PATH };

export const SERVICE_NAME = 'hashproof';
export const SERVICE_SUMMARY =
  'Signed, timestamped proofs that a SHA-256 hash existed at a given time. You hash your file or result ' +
  'yourself and send only the hash, a short label and an idempotency key; the content never reaches the service.';

/** Everything the public documents state, gathered once per request from the live service. */
export interface Facts {
  ctx: AppContext;
  terms: PaymentTerms;
  limits: Limits;
  version: string;
  /** An absolute URL on PUBLIC_BASE_URL. */
  url(path: string): string;
}

export function gatherFacts(ctx: AppContext, bodyMaxBytes: number): Facts {
  return {
    ctx,
    terms: paymentTerms(ctx.config),
    limits: limits(ctx.config, bodyMaxBytes),
    version: SERVICE_VERSION,
    url: (path) => absoluteUrl(ctx.config, path),
  };
}

/** The names of the signed fields, read off the signing message itself (JCS order). */
export function signedFields(): string[] {
  const probe = { id: '', timestamp: '', contentHash: '', metadataHash: '', label: '' };
  return Object.keys(JSON.parse(signingMessage(probe)) as Record<string, unknown>);
}

/** The documents an agent reads, by name, as absolute URLs. */
export function documentLinks(facts: Facts): Record<string, string> {
  const paths: Record<string, string> = {
    openapi: '/openapi.json',
    llms: '/llms.txt',
    quickstart: '/api/quickstart',
    capabilities: '/api/capabilities',
    actions: '/api/actions',
    trust: '/api/trust',
    status: '/api/status',
    dashboard: '/api/dashboard/summary',
    marketplace: '/marketplace.json',
    x402: '/.well-known/x402',
    discovery: '/api/discovery',
    health: '/health',
  };
  return Object.fromEntries(Object.entries(paths).map(([name, path]) => [name, facts.url(path)]));
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, { summary?: string; tags?: string[] } | undefined>>;
  components?: { securitySchemes?: Record<string, { in?: string; name?: string }> };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The JSON operations of the OpenAPI document (pages and assets left out), so the list is never stale. */
export function operationsOf(
  document: unknown,
  terms: PaymentTerms,
): Static<typeof Capabilities>['operations'] {
  const { paths = {} } = document as OpenApiDocument;
  const operations = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined || operation.tags?.includes('pages')) continue;
      operations.push({
        method: method.toUpperCase(),
        path,
        summary: operation.summary ?? '',
        paid: terms.required && (path === NOTARIZE_PATH || path === BATCH_PATH),
      });
    }
  }
  return operations;
}

/** The credential schemes the OpenAPI document declares. */
export function authenticationOf(document: unknown): Static<typeof Capabilities>['authentication'] {
  const schemes = (document as OpenApiDocument).components?.securitySchemes ?? {};
  return Object.entries(schemes).map(([name, scheme]) => ({
    name,
    in: scheme.in ?? '',
    header: scheme.name ?? '',
  }));
}

/** A plain JSON copy of a TypeBox schema (no symbol keys), to publish as an input schema. */
export function plainSchema(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** The RFC 6570 query expansion of a query schema's parameters, `{?q,limit}`. */
export function queryTemplate(schema: { properties: object }): string {
  return `{?${Object.keys(schema.properties).join(',')}}`;
}
