import type { FastifyReply } from 'fastify';
import type { Config } from '../config.ts';
import { SERVICE_VERSION } from '../version.ts';
import { SCRIPT, STYLESHEET } from './assets.ts';
import { html, trusted, type SafeHtml } from './html.ts';
import { absoluteUrl, SITE_PAGES } from './offering.ts';

interface PageOptions {
  /** The path of this page; its canonical and Open Graph URL is built from PUBLIC_BASE_URL. */
  path: string;
  /** The page's own title; " · hashproof" is added unless it already names the service. */
  title: string;
  description: string;
  body: SafeHtml;
  /** Loads the site script (demo hashing, local times, copy buttons). */
  hasScript?: boolean;
  ogType?: 'website' | 'article';
  /** Pages that should not be indexed: not-found pages and search results. */
  isNoIndex?: boolean;
}

const LOGO = trusted(
  '<svg class="logo" viewBox="0 0 24 24" width="24" height="24" aria-hidden="true" focusable="false">' +
    '<path d="M12 2 3 6v6c0 5 3.8 9.4 9 10 5.2-.6 9-5 9-10V6z" fill="#14532d"/>' +
    '<path d="m7.5 12.2 3 3 6-6.4" fill="none" stroke="#fff" stroke-width="2.2" stroke-linecap="round" stroke-linejoin="round"/>' +
    '</svg>',
);

/** A whole HTML document: head with title, description, canonical URL and Open Graph tags, then the site frame. */
export function renderPage(config: Config, options: PageOptions): string {
  const url = absoluteUrl(config, options.path);
  const title = /hashproof/.test(options.title) ? options.title : `${options.title} · hashproof`;
  const nav = SITE_PAGES.filter((page) => page.path !== '/').map(
    (page) =>
      html`<li>
        <a href="${page.path}" ${page.path === options.path ? trusted(' aria-current="page"') : ''}
          >${page.name}</a
        >
      </li>`,
  );
  const mode =
    config.paymentMode === 'demo'
      ? html`<a class="mode mode-demo" href="/pricing" title="Proofs are free on this instance">demo mode</a>`
      : html`<a class="mode mode-paid" href="/pricing">${config.x402?.price ?? ''} per proof</a>`;
  const document = html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title}</title>
        <meta name="description" content="${options.description}" />
        ${options.isNoIndex ? trusted('<meta name="robots" content="noindex" />\n') : ''}
        <link rel="canonical" href="${url}" />
        <meta property="og:site_name" content="hashproof" />
        <meta property="og:type" content="${options.ogType ?? 'website'}" />
        <meta property="og:title" content="${title}" />
        <meta property="og:description" content="${options.description}" />
        <meta property="og:url" content="${url}" />
        <meta name="twitter:card" content="summary" />
        <meta name="theme-color" content="#14532d" />
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="${STYLESHEET.href}" />
        <link rel="alternate" type="application/json" title="OpenAPI" href="/openapi.json" />
        ${options.hasScript ? html`<script src="${SCRIPT.href}" defer></script> ` : ''}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="site-header">
          <div class="wrap header-row">
            <a class="brand" href="/">${LOGO}<span>hashproof</span></a>
            ${mode}
            <nav aria-label="Main">
              <ul>
                ${nav}
              </ul>
            </nav>
          </div>
        </header>
        <main id="main" class="wrap">${options.body}</main>
        <footer class="site-footer">
          <div class="wrap">
            <p>
              hashproof ${SERVICE_VERSION}: signed, timestamped proofs that a SHA-256 hash existed at a given
              time. Not a legal notarization.
            </p>
            <ul class="footer-links">
              <li><a href="/openapi.json">OpenAPI</a></li>
              <li><a href="/api/quickstart">Quickstart</a></li>
              <li><a href="/llms.txt">llms.txt</a></li>
              <li><a href="/api/status">Status</a></li>
              <li><a href="/marketplace.json">Marketplace JSON</a></li>
              <li><a href="/.well-known/x402">x402 discovery</a></li>
              <li><a href="/api/discovery">Directory discovery</a></li>
              ${config.securityContact === undefined ? '' : html`<li><a href="/.well-known/security.txt">Security</a></li>`}
              <li><a href="/sitemap.xml">Sitemap</a></li>
            </ul>
          </div>
        </footer>
      </body>
    </html> `;
  return document.value;
}

/** Sends a rendered page as `text/html; charset=utf-8`. */
export function sendHtml(reply: FastifyReply, page: string, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page);
}

/** The OpenAPI description of an HTML page's responses (routes stay in /openapi.json, as text/html). */
export function htmlResponses(
  description: string,
  extra: Record<number, string> = {},
): Record<number, object> {
  const page = (text: string) => ({
    description: text,
    content: { 'text/html': { schema: { type: 'string' } } },
  });
  return {
    200: page(description),
    ...Object.fromEntries(Object.entries(extra).map(([status, text]) => [status, page(text)])),
  };
}
