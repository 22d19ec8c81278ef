import type { Config } from '../config.ts';
import type { DashboardSummary, ProofHeadline } from '../stats/stats-service.ts';
import { NOTARIZE_PATH, SERVICE_SUMMARY, type Facts } from './facts.ts';
import { formatCount, formatUtc, html, section, type SafeHtml } from './html.ts';
import { renderPage } from './layout.ts';
import { priceSentence, SITE_PAGES } from './offering.ts';

/** A list of proofs as links: label, content hash and time. Labels are escaped like every other value. */
export function proofList(
  proofs: readonly Pick<ProofHeadline, 'id' | 'label' | 'contentHash' | 'timestamp'>[],
  emptyText: string,
): SafeHtml {
  if (proofs.length === 0) return html`<p class="empty">${emptyText}</p>`;
  return html`<ol class="proof-list">
    ${proofs.map(
      (proof) =>
        html`<li>
          <a class="proof-label" href="/proof/${proof.id}">${proof.label}</a>
          <span class="proof-meta"
            ><code class="hash-short" title="${proof.contentHash}">${shortHash(proof.contentHash)}</code>
            <time datetime="${proof.timestamp}">${formatUtc(proof.timestamp)}</time></span
          >
        </li>`,
    )}
  </ol>`;
}

function shortHash(hash: string): string {
  return `${hash.slice(0, 19)}…${hash.slice(-6)}`;
}

/** `/`: what the service does in one screen, live figures, and links to everything. */
export function renderHome(facts: Facts, summary: DashboardSummary, latest: ProofHeadline[]): string {
  const { terms } = facts;
  const { tsaUrls, otsCalendars } = facts.ctx.config.anchors;
  const anchored = tsaUrls.length + otsCalendars.length > 0;
  const body = html` <section class="hero">
      <h1>Prove a file existed, without sharing it</h1>
      <p class="lead">${SERVICE_SUMMARY}</p>
      <p class="links-row">
        <a class="button" href="/demo">Create a proof in your browser</a>
        <a class="button button-quiet" href="/agents">Use the API</a>
      </p>
    </section>
    <section class="stats" aria-label="Live figures">
      <div class="stat">
        <span class="stat-value">${formatCount(summary.proofs.total)}</span
        ><span class="stat-label">proofs in total</span>
      </div>
      <div class="stat">
        <span class="stat-value">${formatCount(summary.proofs.today)}</span
        ><span class="stat-label">created today (UTC)</span>
      </div>
      <div class="stat">
        <span class="stat-value">${terms.required ? terms.price : 'Free'}</span
        ><span class="stat-label"
          >${terms.required ? `per proof, x402 on ${terms.networkName}` : 'demo mode'}</span
        >
      </div>
    </section>
    ${section(
      'how',
      'How it works',
      html`<ol class="how">
        <li>
          <h3>Hash it yourself</h3>
          <p>Compute the SHA-256 of your file or result on your machine. The content never leaves it.</p>
        </li>
        <li>
          <h3>Get a signed timestamp</h3>
          <p>
            Send the hash, a public label and an idempotency key. Creating a proof is ${priceSentence(terms)}.
          </p>
        </li>
        <li>
          <h3>Cite and verify</h3>
          <p>Each proof has a public page, an embeddable badge and a verification API that anyone can use.</p>
        </li>
      </ol>`,
    )}
    ${section(
      'evidence',
      'Evidence you can check without us',
      html`<p>
        Each proof carries more than our word. An Ed25519 receipt anyone checks with our public keys, an RFC
        3161 time-stamp token OpenSSL checks, and a place in an append-only Merkle log whose signed
        checkpoints ${anchored ? 'are time-stamped by outside authorities' : 'anyone can follow'}. Only the
        HMAC signature needs this service. <a href="/trust">What each piece proves, and how to check it</a>.
      </p>`,
    )}
    ${section(
      'latest',
      'Latest proofs',
      html`${proofList(latest, 'No proofs yet. Create the first one in the demo.')}
        <p><a href="/proofs">All proofs and search</a></p>`,
    )}
    ${section(
      'explore',
      'Explore',
      html`<ul class="cards">
          ${SITE_PAGES.filter((page) => page.path !== '/').map(
            (page) =>
              html`<li>
                <a href="${page.path}"><strong>${page.name}</strong><span>${page.description}</span></a>
              </li>`,
          )}
        </ul>
        <p class="muted">
          For programs: <a href="/llms.txt">llms.txt</a> · <a href="/openapi.json">OpenAPI 3.1</a> ·
          <a href="/api/quickstart">quickstart</a> · <a href="/api/actions">action templates</a> ·
          <a href="/api/capabilities">capabilities</a>
        </p>`,
    )}`;
  return renderPage(facts.ctx.config, {
    path: '/',
    title: 'hashproof: timestamped proofs of SHA-256 hashes',
    description: SERVICE_SUMMARY,
    body,
  });
}

/** `/demo`: hashes a file with Web Crypto in the browser, then creates a proof (demo) or shows the price (x402). */
export function renderDemo(facts: Facts): string {
  const { terms, limits } = facts;
  const config: Config = facts.ctx.config;
  const action = terms.required
    ? html`<div class="panel panel-paid">
        <h2>Creating a proof costs ${terms.price}</h2>
        <p>
          This instance charges ${priceSentence(terms)}. This page cannot pay: an x402 client or agent sends
          this request, answers the <code>402</code> challenge and repeats it with the payment.
        </p>
        <pre class="code"><code>POST ${facts.url(NOTARIZE_PATH)}
{"contentHash": "<span data-fill-hash>(pick a file first)</span>", "label": "…", "idempotencyKey": "…"}</code></pre>
        <p>
          <a href="/pricing">Pricing and terms</a> · <a href="/.well-known/x402">x402 discovery document</a> ·
          <a href="/agents">For agents</a>
        </p>
      </div>`
    : html`<p><button type="submit" id="demo-submit" class="button" disabled>Create proof</button></p>`;
  const body = html` <section class="narrow">
      <h1>Create a proof of a file</h1>
      <p class="lead">
        Your browser computes the file's SHA-256 with Web Crypto.
        <strong>The file never leaves your machine</strong>: only its hash and the label you type are sent.
      </p>
      <noscript
        ><p class="panel">
          This page needs JavaScript to hash the file in your browser. Without it, hash the file with
          <code>sha256sum</code> and follow the <a href="/agents">API quickstart</a>.
        </p></noscript
      >
      <form id="demo-form" class="demo" data-mode="${terms.mode}" hidden>
        <div class="field">
          <label for="demo-file">1. Choose a file</label>
          <input type="file" id="demo-file" aria-describedby="demo-status" />
        </div>
        <div class="field">
          <span class="field-label">SHA-256</span>
          <code id="demo-hash" class="hash hash-box" aria-live="polite"></code>
          <a id="demo-existing" href="/proofs" hidden>Look for existing proofs of this hash</a>
        </div>
        <div class="field">
          <label for="demo-label">2. Label <span class="muted">(public)</span></label>
          <input
            type="text"
            id="demo-label"
            name="label"
            maxlength="${limits.labelMaxLength}"
            required
            autocomplete="off"
            placeholder="for example: thesis draft v3"
            aria-describedby="demo-label-hint"
          />
          <p id="demo-label-hint" class="hint">
            Shown on the proof page, 1 to ${limits.labelMaxLength} characters. Do not put a secret in it.
          </p>
        </div>
        ${action}
        <p id="demo-status" class="status" role="status" aria-live="polite"></p>
        <p><a id="demo-proof" class="button button-quiet" href="/proofs" hidden>Open the proof</a></p>
      </form>
    </section>
    <section class="narrow">
      <h2>What is published</h2>
      <p>
        The proof page shows the hash, your label and the time. Anyone who has the same file can hash it and
        find your proof; nobody can recover the file from its hash.
      </p>
      <p>
        The same file with the same label makes one proof: stamping it again shows the proof already made. The
        page derives the idempotency key the way <code>hashproof stamp</code> does: <code>stamp-</code> and
        the first 40 hex digits of the SHA-256 of the content hash, a line feed and the label.
      </p>
    </section>`;
  return renderPage(config, {
    path: '/demo',
    title: 'Demo: create a proof of a file',
    description:
      'Hash a file in your browser with Web Crypto (it never leaves your machine) and create a timestamped proof.',
    body,
    hasScript: true,
  });
}
