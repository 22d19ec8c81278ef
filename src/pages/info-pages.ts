import { buildActionCatalog, buildQuickstart } from './agent-documents.ts';
import type { Action } from './document-schemas.ts';
import { KEYS_MANIFEST_PATH } from '../keys/keyring.ts';
import { documentLinks, type Facts } from './facts.ts';
import { formatCount, html, section, jsonBlock, prose, type SafeHtml } from './html.ts';
import { renderPage } from './layout.ts';
import { configurationText, mcpSetup } from './mcp-setup.ts';
import { priceSentence } from './offering.ts';

const DOCUMENT_NOTES: Record<string, string> = {
  llms: 'start here: what the service is, and every link below (llmstxt.org)',
  openapi: 'the whole API, generated from the schemas that validate requests (OpenAPI 3.1)',
  quickstart: 'six steps from hashing to citing, with commands',
  actions: 'tool definitions: input JSON Schema, URI template, example',
  capabilities: 'algorithms, limits, payment terms, credential schemes, operations',
  trust: 'what each piece of evidence proves, how to check it without us, what is stored',
  status: 'launch stage, uptime, components',
  dashboard: 'live figures',
  marketplace: 'the offerings and their terms',
  x402: 'payment discovery document (x402)',
  discovery: 'metadata for payment-protocol directories',
  health: 'liveness and readiness',
};

/** The x402 terms as a definition list, or the demo-mode sentence. */
function paymentTermsList(facts: Facts): SafeHtml {
  const { terms } = facts;
  if (!terms.required) {
    return html`<p>
      This instance runs in <strong>demo mode</strong>: proofs are created at once and without payment. In
      x402 mode the same request is answered with <code>402 Payment Required</code> until it is paid.
    </p>`;
  }
  return html`<dl class="facts">
    <div>
      <dt>Price</dt>
      <dd><strong>${terms.price}</strong> per proof (${terms.amount} ${terms.currency}, fixed)</dd>
    </div>
    <div>
      <dt>Protocol</dt>
      <dd>x402 version ${terms.x402Version}, scheme <code>${terms.scheme}</code></dd>
    </div>
    <div>
      <dt>Network</dt>
      <dd>${terms.networkName} <code>${terms.network}</code>, paid in USDC</dd>
    </div>
    <div>
      <dt>Paid to</dt>
      <dd><code class="hash">${terms.payTo}</code></dd>
    </div>
    <div>
      <dt>Discovery</dt>
      <dd><a href="/.well-known/x402">${terms.discoveryUrl}</a></dd>
    </div>
  </dl>`;
}

/** A configuration file in a code block, with a copy button (shown when the script runs). */
function configurationBlock(id: string, configuration: object): SafeHtml {
  return html`<pre class="code"><code id="${id}">${configurationText(configuration)}</code></pre>
    <p>
      <button type="button" class="copy" data-copy="${id}" aria-describedby="${id}-label" hidden>Copy</button>
    </p>`;
}

/** The `mcpServers` configuration of both MCP servers, as `mcp` of /api/quickstart gives it. */
function mcpSection(facts: Facts): SafeHtml {
  const { remote, local } = mcpSetup(facts);
  const names = (tools: string[]) => tools.map((name, i) => html`${i > 0 ? ', ' : ''}<code>${name}</code>`);
  return section(
    'mcp',
    'AI agents (MCP)',
    html`<p id="mcp-remote-config-label">
        An agent host (Claude Desktop, Claude Code, Cursor, VS Code …) reaches this service at
        <code>${remote.url}</code> (Model Context Protocol, Streamable HTTP; tools ${names(remote.tools)}),
        with nothing installed. Paste this into its configuration:
      </p>
      ${configurationBlock('mcp-remote-config', remote.configuration)}
      <p>
        To bill new proofs to an account, add <code>"headers": { "${remote.apiKeyHeader}": "…" }</code> with
        one of its API keys to the entry.
      </p>
      <p id="mcp-local-config-label">
        On the user's machine, <code>${local.command}</code> (tools ${names(local.tools)}) hashes files there,
        so only their hash leaves it, and writes and checks proof files beside them. In a checkout of
        hashproof, with ${Object.keys(local.placeholders).map((text) => html`<code>${text}</code>`)} replaced
        by its absolute path:
      </p>
      ${configurationBlock('mcp-local-config', local.configuration)}
      <p>
        The same as JSON: <code>mcp</code> in <a href="/api/quickstart">/api/quickstart</a> and
        <a href="/api/capabilities">/api/capabilities</a>.
      </p>`,
  );
}

/** `/agents`: how a program uses the service on its own, from the same data as /api/quickstart. */
export function renderAgents(facts: Facts): string {
  const quickstart = buildQuickstart(facts);
  const links = documentLinks(facts);
  const body = html` <h1>For agents and programs</h1>
    <p class="lead">
      Everything a program needs is machine-readable. An agent can start from
      <a href="/llms.txt">/llms.txt</a> and create, verify and find proofs without a human. Creating a proof
      is ${priceSentence(facts.terms)}.
    </p>
    ${mcpSection(facts)}
    ${section(
      'docs',
      'Documents',
      html`<ul class="doc-list">
        ${Object.entries(links).map(
          ([name, url]) =>
            html`<li>
              <a href="${url}"><code>${new URL(url).pathname}</code></a>
              <span class="muted">${DOCUMENT_NOTES[name] ?? ''}</span>
            </li>`,
        )}
      </ul>`,
    )}
    ${section(
      'steps',
      'Quickstart',
      html`<ol class="steps">
        ${quickstart.steps.map(
          (step) =>
            html`<li>
              <h3>${step.title}</h3>
              <p>${prose(step.description)}</p>
              ${step.command ? html`<pre class="code"><code>${step.command}</code></pre>` : ''}
            </li>`,
        )}
      </ol>`,
    )}
    ${section(
      'offline',
      'Check a proof offline',
      html`<p>
          Fetch the public keys once, over HTTPS, and keep the copy:
          <a href="${KEYS_MANIFEST_PATH}">${facts.url(KEYS_MANIFEST_PATH)}</a>. With it, an agent checks a
          proof without asking this service: the Ed25519 receipt, the RFC 3161 token (also with
          <code>openssl ts -verify</code>) and the proof's place in the transparency log. Only the HMAC
          signature needs the service (<code>--online</code>). The <code>hashproof</code> command comes with
          the service's source: run it in a checkout (<code>npm run hashproof -- verify FILE</code>) or
          install the checkout's packed tarball (<code>npm pack</code>); <code>npx hashproof</code> would
          fetch whatever package of that name the npm registry holds.
        </p>
        <pre class="code"><code>curl -s ${facts.url(KEYS_MANIFEST_PATH)} &gt; hashproof-keys.json
hashproof stamp FILE --url ${facts.url('')}   # writes FILE.proof.json with its evidence
hashproof verify FILE --keys hashproof-keys.json</code></pre>
        <p>
          What each piece proves, and what not: <a href="/trust">/trust</a>, as JSON in
          <code>evidence</code> of <a href="/api/trust">/api/trust</a>.
        </p>`,
    )}
    ${section('pay', 'Payment', html`${paymentTermsList(facts)}`)}
    ${section(
      'rules',
      'Rules worth knowing',
      html`<ul>
        ${buildActionCatalog(facts, null).conventions.map((line) => html`<li>${line}</li>`)}
      </ul>`,
    )}`;
  return renderPage(facts.ctx.config, {
    path: '/agents',
    title: 'For agents and programs',
    description:
      'How a program or an AI agent creates, verifies and finds timestamped proofs with hashproof.',
    body,
    hasScript: true,
  });
}

/** `/pricing`: the price from the configuration, what is free, and the limits. */
export function renderPricing(facts: Facts): string {
  const { terms, limits } = facts;
  const body = html` <h1>Pricing</h1>
    <section class="price-card">
      <p class="price">${terms.required ? terms.price : 'Free'}</p>
      <p>
        ${terms.required ? 'per proof, paid per request with x402: no account, no subscription.' : 'in demo mode: this instance creates proofs without payment.'}
      </p>
    </section>
    ${section(
      'terms',
      'Terms',
      html`${paymentTermsList(facts)}
        <p>
          A retry with the same idempotency key and content returns the stored proof; it is not a new proof
          and is not charged again.
        </p>
        <p>
          A batch (<code>POST /api/proof/batch</code>, up to ${formatCount(limits.batch.maxItems)} items) is
          ${terms.required ? html`paid once, <strong>${terms.price}</strong> times the count of its items not already answered` : 'free in demo mode, as single proofs are'};
          items that replay a stored proof or fail their checks cost nothing.
        </p>`,
    )}
    ${section(
      'free',
      'Always free',
      html`<ul>
        <li>Reading a proof, its page and its badge</li>
        <li>Verifying a proof (<code>/api/verify/proofs/{id}</code>)</li>
        <li>Listing and searching proofs</li>
        <li>
          Every document for agents: <a href="/api/quickstart">quickstart</a>,
          <a href="/api/actions">actions</a>, <a href="/openapi.json">OpenAPI</a>
        </li>
      </ul>`,
    )}
    ${section(
      'limits',
      'Limits',
      html`<table class="table">
        <tbody>
          <tr>
            <th scope="row">Requests</th>
            <td>
              ${limits.rateLimit ? `${formatCount(limits.rateLimit.max)} per ${limits.rateLimit.windowSeconds} s per client` : 'no rate limit on this instance'}
            </td>
          </tr>
          <tr>
            <th scope="row">Label</th>
            <td>1 to ${limits.labelMaxLength} characters, one line</td>
          </tr>
          <tr>
            <th scope="row">Metadata</th>
            <td>
              at most ${formatCount(limits.metadataMaxBytes)} bytes of JSON; only its hash and key names are
              published
            </td>
          </tr>
          <tr>
            <th scope="row">Idempotency key</th>
            <td>1 to ${limits.idempotencyKeyMaxLength} characters; never expires</td>
          </tr>
          <tr>
            <th scope="row">Request body</th>
            <td>at most ${formatCount(limits.bodyMaxBytes)} bytes</td>
          </tr>
          <tr>
            <th scope="row">Batch</th>
            <td>
              up to ${formatCount(limits.batch.maxItems)} items and ${formatCount(limits.batch.maxBytes)}
              bytes; counts one request per ${limits.batch.itemsPerRequest} items against the limit
            </td>
          </tr>
          <tr>
            <th scope="row">Search page</th>
            <td>${limits.searchLimitDefault} proofs by default, at most ${limits.searchLimitMax}</td>
          </tr>
        </tbody>
      </table>`,
    )}`;
  return renderPage(facts.ctx.config, {
    path: '/pricing',
    title: 'Pricing',
    description: `What a hashproof proof costs: ${priceSentence(terms)}. Reading and verifying are free.`,
    body,
  });
}

function inputRows(action: Action): SafeHtml {
  const schema = action.inputSchema as {
    properties?: Record<
      string,
      { type?: string; description?: string; maxLength?: number; pattern?: string }
    >;
    required?: string[];
  };
  return html`<table class="table">
    <thead>
      <tr>
        <th scope="col">Input</th>
        <th scope="col">Type</th>
        <th scope="col">Notes</th>
      </tr>
    </thead>
    <tbody>
      ${Object.entries(schema.properties ?? {}).map(
        ([name, property]) =>
          html`<tr>
            <td>
              <code>${name}</code
              >${schema.required?.includes(name) ? html` <span class="tag">required</span>` : ''}
            </td>
            <td>${property.type ?? ''}</td>
            <td>${prose(property.description ?? '')}</td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** `/actions`: the action catalog of /api/actions, for people writing a tool definition. */
export function renderActions(facts: Facts, newestProofId: string | null): string {
  const catalog = buildActionCatalog(facts, newestProofId);
  const body = html` <h1>Actions</h1>
    <p class="lead">
      Templates a tool-using agent fills in: each action has a name, an input JSON Schema, an RFC 6570 URI
      template and a worked example. The same catalog as JSON: <a href="/api/actions">/api/actions</a>.
    </p>
    <ul>
      ${catalog.conventions.map((line) => html`<li>${line}</li>`)}
    </ul>
    ${catalog.actions.map(
      (action) =>
        html`<section class="action" aria-labelledby="action-${action.name}">
          <h2 id="action-${action.name}">
            <code>${action.name}</code> <span class="action-title">${action.title}</span>
          </h2>
          <p>${prose(action.description)}</p>
          <p>
            <span class="method">${action.method}</span>
            <code class="hash">${action.urlTemplate}</code>
            ${action.paid ? html`<span class="tag tag-paid">${action.price}</span>` : html`<span class="tag">free</span>`}
          </p>
          ${inputRows(action)}
          <p class="snippet-label">Example input</p>
          ${jsonBlock(action.example)}
          <p class="muted">Returns ${action.returns}</p>
        </section>`,
    )}`;
  return renderPage(facts.ctx.config, {
    path: '/actions',
    title: 'Actions',
    description:
      'Action templates for tool-using agents: create, verify, read and search timestamped proofs.',
    body,
  });
}
