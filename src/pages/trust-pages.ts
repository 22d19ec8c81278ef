import type { Static } from 'typebox';
import type { Marketplace, TrustSummary } from './document-schemas.ts';
import { KEYS_MANIFEST_PATH } from '../keys/keyring.ts';
import type { Facts } from './facts.ts';
import { formatCount, formatUtc, html, section, type SafeHtml } from './html.ts';
import { renderPage } from './layout.ts';

const yesNo = (value: boolean): SafeHtml =>
  value ? html`<span class="tag tag-yes">yes</span>` : html`<span class="tag tag-no">no</span>`;

/** A contact URI as a link when it is one a browser can open; as text otherwise. */
function contactLink(contact: string): SafeHtml {
  if (/^(mailto|https):/i.test(contact))
    return html`<a href="${contact}">${contact.replace(/^mailto:/i, '')}</a>`;
  return html`<code>${contact}</code>`;
}

/** A link of an evidence kind: a link when it is a fixed address, the path as text when it is a template. */
function evidenceLink(name: string, url: string): SafeHtml {
  const path = decodeURI(new URL(url).pathname);
  return path.includes('{id}')
    ? html`<li>${name}: <code>${path}</code></li>`
    : html`<li>${name}: <a href="${path}">${path}</a></li>`;
}

const LINK_NAMES: Record<string, string> = {
  verify: 'verification report',
  keys: 'keys manifest',
  proof: 'proof JSON',
  token: 'the token',
  tsaCertificates: 'TSA certificates',
  tlogProof: 'tlog-proof file',
  inclusion: 'inclusion proof',
  checkpoint: "the log's checkpoint",
  anchors: "the proof's anchors",
  logAnchors: "the log's anchors",
  ots: 'OpenTimestamps file',
};

/** The evidence a proof carries, one card a kind: what it proves, what not, how to check it without us. */
function evidenceSection(evidence: TrustSummary['evidence']): SafeHtml {
  return section(
    'evidence',
    'The evidence in a proof',
    html`<p>
        Only the HMAC signature needs this service. Everything else can be checked without us:
        <code>hashproof verify FILE --online</code> checks them all, OpenSSL checks the RFC 3161 tokens, and
        the public keys are in <a href="${KEYS_MANIFEST_PATH}">${KEYS_MANIFEST_PATH}</a> (keep a copy you
        fetched once: that copy is what you trust).
      </p>
      <ol class="evidence-kinds">
        ${evidence.map(
          (item) =>
            html`<li id="evidence-${item.kind}">
              <h3>
                ${item.name} ${item.issued ? '' : html`<span class="tag tag-no">not on this instance</span>`}
              </h3>
              <dl class="facts">
                <div>
                  <dt>Where</dt>
                  <dd><code>${item.field}</code></dd>
                </div>
                <div>
                  <dt>Proves</dt>
                  <dd>${item.proves}</dd>
                </div>
                <div>
                  <dt>Does not prove</dt>
                  <dd>${item.doesNotProve}</dd>
                </div>
                <div>
                  <dt>Check it without us</dt>
                  <dd>
                    ${item.checkWithoutUs}
                    ${item.command === null ? '' : html`<pre class="code"><code>${item.command}</code></pre>`}
                    <ul class="evidence-links">
                      ${Object.entries(item.links).map(([name, url]) => evidenceLink(LINK_NAMES[name] ?? name, url))}
                    </ul>
                  </dd>
                </div>
              </dl>
            </li>`,
        )}
      </ol>`,
  );
}

/** What a proof proves and what it does not, side by side (the trust page and each proof's page). */
export function meaningSection(
  heading: string,
  proves: readonly string[],
  doesNotProve: readonly string[],
): SafeHtml {
  const list = (lines: readonly string[]) =>
    html`<ul>
      ${lines.map((line) => html`<li>${line}</li>`)}
    </ul>`;
  return section(
    'meaning',
    heading,
    html`<div>
        <h3>It proves</h3>
        ${list(proves)}
      </div>
      <div>
        <h3>It does not prove</h3>
        ${list(doesNotProve)}
      </div>`,
    { section: 'two-col', heading: 'span-all' },
  );
}

/** `/trust`: the trust summary of /api/trust, for people. */
export function renderTrust(facts: Facts, trust: TrustSummary): string {
  const { signing, dataHandling, storage, proofs, security } = trust;
  const body = html` <h1>Trust</h1>
    <p class="lead">
      What a hashproof proof is worth, how it is made, and what this service keeps. The same summary as JSON:
      <a href="/api/trust">/api/trust</a>.
    </p>
    ${meaningSection('What a proof means', trust.proves, trust.doesNotProve)}
    ${evidenceSection(trust.evidence)}
    ${section(
      'signing',
      'Signing',
      html`<dl class="facts">
        <div>
          <dt>Algorithm</dt>
          <dd><code>${signing.algorithm}</code></dd>
        </div>
        <div>
          <dt>Signed message</dt>
          <dd>
            ${signing.canonicalization} canonical JSON of
            ${signing.signedFields.map((field, i) => html`${i > 0 ? ', ' : ''}<code>${field}</code>`)}
          </dd>
        </div>
        <div>
          <dt>Keys</dt>
          <dd>
            <ul class="keys">
              ${signing.keys.map((key) => html`<li><code>${key.keyId}</code> <span class="muted">since ${formatUtc(key.createdAt)}</span>${key.active ? html` <span class="tag tag-yes">signing now</span>` : ''}</li>`)}
            </ul>
          </dd>
        </div>
        <div>
          <dt>Verification</dt>
          <dd>${signing.verification} <code>/api/verify/proofs/{id}</code></dd>
        </div>
      </dl>`,
    )}
    ${section(
      'data',
      'What is stored',
      html`<table class="table">
        <tbody>
          <tr>
            <th scope="row">Your content</th>
            <td>${yesNo(dataHandling.storesContent)} only its SHA-256, which you computed</td>
          </tr>
          <tr>
            <th scope="row">Your raw metadata</th>
            <td>${yesNo(dataHandling.storesRawMetadata)} only its hash and its key names</td>
          </tr>
          <tr>
            <th scope="row">Request headers</th>
            <td>${yesNo(dataHandling.storesRequestHeaders)}</td>
          </tr>
          <tr>
            <th scope="row">Idempotency keys</th>
            <td>
              ${yesNo(dataHandling.idempotencyKeysSearchable)} stored and searchable: never put a secret in
              one
            </td>
          </tr>
          <tr>
            <th scope="row">Published fields</th>
            <td>
              ${dataHandling.publishedFields.map((field, i) => html`${i > 0 ? ', ' : ''}<code>${field}</code>`)}
            </td>
          </tr>
          <tr>
            <th scope="row">Durability</th>
            <td>${storage.durability}</td>
          </tr>
          <tr>
            <th scope="row">Retention</th>
            <td>${storage.retention}</td>
          </tr>
          <tr>
            <th scope="row">Proofs issued</th>
            <td>
              ${formatCount(proofs.total)}${proofs.latestAt ? html`, the newest at <time datetime="${proofs.latestAt}">${formatUtc(proofs.latestAt)}</time>` : ''}
            </td>
          </tr>
        </tbody>
      </table>`,
    )}
    ${section(
      'security',
      'Security',
      html`${
        security.contact === null
          ? html`<p id="security-contact">
              No security contact is configured on this instance: its operator has not set one
              (<code>SECURITY_CONTACT</code>), so it serves no <code>security.txt</code>.
            </p>`
          : html`<p id="security-contact">
              Report a vulnerability to ${contactLink(security.contact)}. Machine-readable:
              <a href="/.well-known/security.txt">/.well-known/security.txt</a> (RFC 9116).
            </p>`
      }`,
    )}`;
  return renderPage(facts.ctx.config, {
    path: '/trust',
    title: 'Trust',
    description:
      'What each piece of evidence in a hashproof proof proves and does not, how to check it without the service, and what the service stores.',
    body,
  });
}

/** `/marketplace`: the listings of /marketplace.json. */
export function renderMarketplace(facts: Facts, marketplace: Static<typeof Marketplace>): string {
  const body = html` <h1>Marketplace</h1>
    <p class="lead">
      The offerings of this service and their terms. Directories and agents read the same listing as JSON:
      <a href="/marketplace.json">/marketplace.json</a>.
    </p>
    <ul class="listings">
      ${marketplace.listings.map(
        (listing) =>
          html`<li class="listing">
            <h2>${listing.name}</h2>
            <p>${listing.summary}</p>
            <p class="listing-price">
              ${listing.pricing.model === 'fixed' ? html`<strong>${listing.pricing.price}</strong> per call, ${listing.pricing.protocol} on <code>${listing.pricing.network}</code>` : html`<strong>Free</strong>`}
            </p>
            <p>
              <span class="method">${listing.endpoint.method}</span>
              <code class="hash">${listing.endpoint.urlTemplate}</code>
            </p>
            <p>${listing.tags.map((tag) => html`<span class="tag">${tag}</span> `)}</p>
            <p><a href="${listing.docs}">Documentation</a></p>
          </li>`,
      )}
    </ul>`;
  return renderPage(facts.ctx.config, {
    path: '/marketplace',
    title: 'Marketplace',
    description:
      'The offerings of hashproof: timestamped hash proofs, verification and search, with their terms.',
    body,
  });
}
