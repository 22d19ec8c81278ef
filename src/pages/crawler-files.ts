import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { errorResponses } from '../http/openapi.ts';
import type { ProofHeadline } from '../stats/stats-service.ts';
import { documentLinks, gatherFacts, SERVICE_NAME, SERVICE_SUMMARY, type Facts } from './facts.ts';
import { KEYS_MANIFEST_PATH } from '../keys/keyring.ts';
import { escapeHtml } from './html.ts';
import { configurationText, mcpSetup } from './mcp-setup.ts';
import { priceSentence, SITE_PAGES } from './offering.ts';

/** How many proof pages the sitemap lists, newest first (one file holds at most 50,000 URLs). */
const SITEMAP_PROOF_COUNT = 1000;
/** security.txt expires this long after it is served (RFC 9116 §2.5.5: less than a year). */
const SECURITY_TXT_LIFETIME_DAYS = 180;

/** The `mcpServers` configuration of both MCP servers, as `mcp` of /api/quickstart gives it. */
function mcpLines(facts: Facts): string[] {
  const { remote, local } = mcpSetup(facts);
  const names = (tools: string[]) => tools.map((name) => `\`${name}\``).join(', ');
  const block = (configuration: object) => ['```json', configurationText(configuration), '```'];
  return [
    `AI agents (MCP): this service is a Model Context Protocol server at ${remote.url} (Streamable HTTP; tools ${names(remote.tools)}). An agent host's configuration, as it is (add \`"headers": { "${remote.apiKeyHeader}": "…" }\` with an API key to bill new proofs to an account):`,
    '',
    ...block(remote.configuration),
    '',
    `On the user's machine, \`${local.command}\` (tools ${names(local.tools)}) hashes files there and writes and checks proof files beside them. In a checkout of hashproof, with ${Object.keys(local.placeholders).join(', ')} replaced by its absolute path:`,
    '',
    ...block(local.configuration),
    '',
    `The same as JSON: \`mcp\` in ${documentLinks(facts).quickstart ?? ''} and ${documentLinks(facts).capabilities ?? ''}.`,
  ];
}

/** /llms.txt in the llmstxt.org format: H1, blockquote, plain paragraphs, then H2 sections of links. */
function renderLlmsTxt(facts: Facts): string {
  const links = documentLinks(facts);
  const { limits, terms } = facts;
  const item = (name: string, url: string, notes: string) => `- [${name}](${url}): ${notes}`;
  const lines = [
    `# ${SERVICE_NAME}`,
    '',
    `> ${SERVICE_SUMMARY}`,
    '',
    `Creating a proof: ${priceSentence(terms)}. Reading, searching and verifying proofs are free and need no credentials.`,
    '',
    `- Send only \`sha256:\` + 64 hex digits of your content, a label of 1 to ${limits.labelMaxLength} characters, optional non-secret metadata (at most ${limits.metadataMaxBytes} bytes; only its hash and key names are published) and an \`idempotencyKey\`.`,
    '- A retry with the same idempotencyKey and content returns the same proof (`idempotentReplay: true`); the same key with other content is a 422.',
    `- Up to ${limits.batch.maxItems} proofs in one request: POST ${facts.url('/api/proof/batch')} with \`{ "items": [ … ] }\`; each item is answered as a single call would be${terms.required ? `, at ${terms.price} per item not already answered` : ''}. It counts one request per ${limits.batch.itemsPerRequest} items against the rate limit.`,
    '- Every error is JSON: `{ "error": { "code", "message", "details" } }`.',
    ...(limits.rateLimit
      ? [
          `- At most ${limits.rateLimit.max} requests per ${limits.rateLimit.windowSeconds} s per client; a 429 carries Retry-After.`,
        ]
      : []),
    '',
    ...mcpLines(facts),
    '',
    '## API',
    '',
    item('OpenAPI 3.1', links.openapi ?? '', 'every operation with its request and response schemas'),
    item(
      'Quickstart',
      links.quickstart ?? '',
      'six steps from hashing a file to citing and finding its proof',
    ),
    item(
      'Action templates',
      links.actions ?? '',
      'tool definitions to fill in: input schema, URI template, example',
    ),
    item('Capabilities', links.capabilities ?? '', 'algorithms, limits, payment terms and operations'),
    item('x402 payment discovery', links.x402 ?? '', 'the payment terms of proof creation'),
    '',
    '## Verify',
    '',
    item(
      'Verification report',
      facts.url('/api/verify/proofs/{id}'),
      'recomputes the signature of a proof now',
    ),
    item('Proof document', facts.url('/api/proofs/{id}'), 'the public JSON of a proof'),
    item(
      'Search',
      facts.url('/api/proofs/search'),
      'add `?contentHash=sha256:<hex>` to find the proofs of a hash',
    ),
    item(
      'Trust summary',
      links.trust ?? '',
      'what each piece of evidence in a proof proves and does not, and how to check it without the service',
    ),
    item(
      'Keys manifest',
      facts.url(KEYS_MANIFEST_PATH),
      'every public key (receipt, log, TSA): keep a copy to check proofs offline',
    ),
    '',
    '## Pages',
    '',
    ...SITE_PAGES.map((page) => item(page.name, facts.url(page.path), page.description)),
    '',
    '## Optional',
    '',
    item('Recent proofs', facts.url('/api/proofs/recent'), 'newest first, signatures redacted'),
    item('Dashboard summary', links.dashboard ?? '', 'live figures as JSON'),
    item('Status', links.status ?? '', 'launch stage, uptime and components'),
    item('Marketplace listing', links.marketplace ?? '', 'the offerings and their terms as JSON'),
    item('Directory discovery', links.discovery ?? '', 'metadata for payment-protocol directories'),
    item('Health', links.health ?? '', 'liveness and readiness'),
  ];
  return lines.join('\n') + '\n';
}

/** Crawlers may read everything but the administrator routes' paths. */
function renderRobotsTxt(facts: Facts, adminPrefixes: readonly string[]): string {
  return [
    'User-agent: *',
    'Allow: /',
    ...adminPrefixes.map((prefix) => `Disallow: ${prefix}`),
    '',
    `Sitemap: ${facts.url('/sitemap.xml')}`,
    '',
  ].join('\n');
}

/** sitemaps.org 0.9: the public pages, then the newest proof pages with their creation time. */
function renderSitemap(facts: Facts, proofs: ProofHeadline[]): string {
  const url = (loc: string, lastmod?: string) =>
    `<url><loc>${escapeHtml(loc)}</loc>${lastmod ? `<lastmod>${escapeHtml(lastmod)}</lastmod>` : ''}</url>`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...SITE_PAGES.map((page) => url(facts.url(page.path))),
    ...proofs.map((proof) => url(facts.url(`/proof/${proof.id}`), proof.timestamp)),
    '</urlset>',
    '',
  ].join('\n');
}

/** RFC 9116, with Expires computed when served so the file never goes stale. */
function renderSecurityTxt(facts: Facts, contact: string): string {
  const expires = new Date(facts.ctx.clock.now() + SECURITY_TXT_LIFETIME_DAYS * 86_400_000);
  return [
    `Contact: ${contact}`,
    `Expires: ${expires.toISOString().replace(/\.\d{3}Z$/, 'Z')}`,
    'Preferred-Languages: en',
    `Canonical: ${facts.url('/.well-known/security.txt')}`,
    `Policy: ${facts.url('/trust')}`,
    '',
  ].join('\n');
}

/** /llms.txt, /robots.txt, /sitemap.xml and /.well-known/security.txt. */
export async function crawlerFileRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const facts = () => gatherFacts(ctx, app.initialConfig.bodyLimit ?? 0);
  const file = (summary: string, mediaType: string) => ({
    schema: {
      summary,
      tags: ['service'],
      response: {
        200: { description: summary, content: { [mediaType]: { schema: { type: 'string' } } } },
        ...errorResponses(429),
      },
    },
  });
  const text = 'text/plain; charset=utf-8';

  app.get(
    '/llms.txt',
    file('Guidance for language models and crawlers (llmstxt.org)', 'text/plain'),
    (_r, reply) => reply.type(text).send(renderLlmsTxt(facts())),
  );
  app.get('/robots.txt', file('Crawler rules (RFC 9309)', 'text/plain'), (_r, reply) =>
    reply.type(text).send(renderRobotsTxt(facts(), app.adminRoutes.prefixes)),
  );
  app.get(
    '/sitemap.xml',
    file('Sitemap of the public pages and newest proofs', 'application/xml'),
    async (_r, reply) =>
      reply
        .type('application/xml; charset=utf-8')
        .send(renderSitemap(facts(), await ctx.stats.newest(SITEMAP_PROOF_COUNT))),
  );
  // RFC 9116 requires a Contact: without SECURITY_CONTACT there is none to give, so no file (a 404).
  app.get(
    '/.well-known/security.txt',
    {
      schema: {
        summary: 'Security contact (RFC 9116)',
        description: 'A 404 when the operator configured no security contact (`SECURITY_CONTACT`).',
        tags: ['service'],
        response: {
          200: {
            description: 'The security.txt file',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errorResponses(404, 429),
        },
      },
    },
    (_r, reply) => {
      const contact = ctx.config.securityContact;
      if (contact === undefined) {
        throw new AppError('not_found', 'No security contact is configured on this instance.', {
          setting: 'SECURITY_CONTACT',
        });
      }
      return reply
        .type(text)
        .header('Cache-Control', 'public, max-age=86400')
        .send(renderSecurityTxt(facts(), contact));
    },
  );
}
