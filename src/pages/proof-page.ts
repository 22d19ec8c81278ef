import type { Config } from '../config.ts';
import type { Proof } from '../proofs/proof-schemas.ts';
import { anchorsFact } from './anchor-facts.ts';
import { renderEvidenceChain, renderProofEvidence, type ProofEvidence } from './evidence-chain.ts';
import { formatUtc, html, section, type SafeHtml } from './html.ts';
import { renderPage } from './layout.ts';
import { absoluteUrl } from './offering.ts';
import { DOES_NOT_PROVE, PROVES } from './service-documents.ts';
import { meaningSection } from './trust-pages.ts';

/** A value with a copy button (the button appears only when the script runs). */
function copyable(id: string, value: string, className = 'hash'): SafeHtml {
  return html`<span class="copyable"
    ><code id="${id}" class="${className}">${value}</code
    ><button type="button" class="copy" data-copy="${id}" hidden>Copy</button></span
  >`;
}

function paidBy(proof: Proof): SafeHtml {
  if (proof.payment !== null) {
    const { network, payer, transaction } = proof.payment;
    return html`x402 payment on <code>${network}</code> by <code class="hash">${payer}</code>, transaction
      <code class="hash">${transaction}</code>`;
  }
  if (proof.accountId !== null) return html`API key of account <code>${proof.accountId}</code>`;
  return html`Demo mode (no payment)`;
}

function inclusionDetails(inclusion: ProofEvidence['inclusion']): SafeHtml | string {
  if (inclusion === undefined) return '';
  return html`<details class="inclusion">
    <summary>Inclusion proof against the tree of ${inclusion.treeSize} entries</summary>
    <p>Root hash <code class="hash">${inclusion.rootHash}</code>. Audit path (RFC 6962, from the leaf up):</p>
    <ol class="audit-path">
      ${inclusion.hashes.map((hash) => html`<li><code class="hash">${hash}</code></li>`)}
    </ol>
    ${
      inclusion.checkpoint === null
        ? ''
        : html`<p>Signed checkpoint (C2SP signed note):</p>
            <pre class="checkpoint">${inclusion.checkpoint}</pre>`
    }
  </details>`;
}

function logEntry(proof: Proof, inclusion: ProofEvidence['inclusion']): SafeHtml {
  if (proof.log === null) {
    return html`<span class="muted"
      >not integrated yet: the log takes new proofs within about a second</span
    >`;
  }
  const { origin, leafIndex } = proof.log;
  return html`entry <strong>${leafIndex}</strong> of <code>${origin}</code> ·
    <a href="/api/proofs/${proof.id}/inclusion">inclusion proof</a> ·
    <a href="/api/proofs/${proof.id}/tlog-proof">tlog-proof file</a> ·
    <a href="/log/checkpoint">checkpoint</a>
    ${inclusionDetails(inclusion)}`;
}

function badgeSnippets(config: Config, id: string): { markdown: string; html: string } {
  const page = absoluteUrl(config, `/proof/${id}`);
  const badge = absoluteUrl(config, `/proof/${id}/badge.svg`);
  return {
    markdown: `[![hashproof proof](${badge})](${page})`,
    html: `<a href="${page}"><img src="${badge}" alt="hashproof proof" height="20"></a>`,
  };
}

/** The badge page of one proof: what was proven, whether it verifies now, and how to check it yourself. */
export function renderProofPage(
  config: Config,
  proof: Proof,
  checkedAt: string,
  evidence: ProofEvidence,
): string {
  const { id } = proof;
  const { inclusion } = evidence;
  const snippets = badgeSnippets(config, id);
  const hex = proof.contentHash.slice('sha256:'.length);
  const verdict = proof.verified
    ? html`<p class="verdict verdict-ok">
        <span class="verdict-mark" aria-hidden="true">✓</span> <strong>Signature verified</strong>
        <span class="muted">checked ${formatUtc(checkedAt)}</span>
      </p>`
    : html`<p class="verdict verdict-bad">
        <span class="verdict-mark" aria-hidden="true">✗</span> <strong>Signature does not verify</strong>
        <span class="muted"
          >checked ${formatUtc(checkedAt)}: the stored proof was altered, or its key is missing</span
        >
      </p>`;
  const keys =
    proof.metadataKeys.length === 0
      ? html`<span class="muted">none (no metadata was sent)</span>`
      : html`<ul class="keys">
          ${proof.metadataKeys.map((key) => html`<li><code>${key}</code></li>`)}
        </ul>`;
  const body = html` <article class="proof">
    <p class="eyebrow">Timestamped proof · <code>${id}</code></p>
    <h1 class="proof-title">${proof.label}</h1>
    ${verdict}
    <dl class="facts">
      <div>
        <dt>Content hash</dt>
        <dd>${copyable('content-hash', proof.contentHash)}</dd>
      </div>
      <div>
        <dt>Proven at</dt>
        <dd>
          <time datetime="${proof.timestamp}" data-local>${formatUtc(proof.timestamp)}</time>
          <span class="local-time muted" data-local-for="${proof.timestamp}"></span>
        </dd>
      </div>
      <div>
        <dt>Metadata keys</dt>
        <dd>${keys}</dd>
      </div>
      <div>
        <dt>Metadata hash</dt>
        <dd><code class="hash">${proof.metadataHash}</code></dd>
      </div>
      <div>
        <dt>Signature</dt>
        <dd>
          <code class="hash">${proof.signature}</code>
          <span class="muted">key <code>${proof.keyId}</code></span>
        </dd>
      </div>
      <div>
        <dt>Transparency log</dt>
        <dd>${logEntry(proof, inclusion)}</dd>
      </div>
      <div>
        <dt>RFC 3161 token</dt>
        <dd>
          ${
            proof.timestampToken === null
              ? html`<span class="muted">none (made before tokens existed)</span>`
              : html`<a href="${proof.timestampToken}" download>${id}.tsr</a>
                  <span class="muted"
                    >verify with <code>openssl ts -verify</code> and
                    <a href="/api/tsa/certs.pem">the TSA certificates</a></span
                  >`
          }
        </dd>
      </div>
      <div>
        <dt>Anchors</dt>
        <dd>${anchorsFact(id, evidence.anchor, evidence.anchorsEnabled)}</dd>
      </div>
      <div>
        <dt>Paid by</dt>
        <dd>${paidBy(proof)}</dd>
      </div>
    </dl>
    <p class="links-row">
      <a class="button" href="/api/verify/proofs/${id}">Verification report</a>
      <a class="button button-quiet" href="/api/proofs/${id}">Proof JSON</a>
      <a class="button button-quiet" href="/proofs?q=${encodeURIComponent(proof.contentHash)}"
        >Other proofs of this hash</a
      >
    </p>

    ${section('evidence', 'Evidence', html`${renderEvidenceChain(proof, evidence)} ${renderProofEvidence(proof, evidence)}`)}
    ${section(
      'compare',
      'Check a file against this proof',
      html`<p>Pick the file: your browser hashes it and compares. Nothing is uploaded.</p>
        <p>
          <input
            type="file"
            id="compare-file"
            data-compare="${proof.contentHash}"
            aria-describedby="compare-result"
          />
        </p>
        <p id="compare-result" class="compare-result" role="status" aria-live="polite"></p>`,
      { section: 'panel' },
    )}
    ${section(
      'yourself',
      'Check it yourself',
      html`<ol class="steps">
        <li>
          Hash your copy of the content and compare with the content hash above:
          <pre class="code"><code>sha256sum FILE                          # Linux
shasum -a 256 FILE                      # macOS
Get-FileHash FILE -Algorithm SHA256     # Windows PowerShell</code></pre>
          The output must be <code class="hash">${hex}</code>.
        </li>
        <li>
          Ask the service to recompute the signature now:
          <pre class="code"><code>curl -s ${absoluteUrl(config, `/api/verify/proofs/${id}`)}</code></pre>
          The report shows <code>"verified": true</code> and the exact signed message: the RFC 8785 canonical
          JSON of the id, timestamp, content hash, metadata hash and label.
        </li>
        <li>
          If you kept the metadata, hash its RFC 8785 canonical JSON with SHA-256 and compare with the
          metadata hash.
        </li>
      </ol>`,
    )}
    ${section(
      'embed',
      'Embed the badge',
      html`<p>
          <a href="/proof/${id}"
            ><img
              src="/proof/${id}/badge.svg"
              alt="hashproof badge: ${proof.verified ? 'verified' : 'does not verify'}"
              height="20"
          /></a>
        </p>
        <p class="snippet-label">Markdown</p>
        ${copyable('embed-markdown', snippets.markdown, 'snippet')}
        <p class="snippet-label">HTML</p>
        ${copyable('embed-html', snippets.html, 'snippet')}`,
    )}
    ${meaningSection('What this proof means', PROVES, DOES_NOT_PROVE)}
  </article>`;
  return renderPage(config, {
    path: `/proof/${id}`,
    title: `Proof: ${proof.label}`,
    description: `Timestamped proof that ${proof.contentHash} existed at ${formatUtc(proof.timestamp)}; signature ${proof.verified ? 'verified' : 'does not verify'}.`,
    body,
    hasScript: true,
    ogType: 'article',
  });
}

/** The friendly 404 of /proof/{id}: says what happened and offers a search. */
export function renderProofNotFound(config: Config, id: string): string {
  const body = html` <section class="not-found">
    <p class="eyebrow">404 · proof not found</p>
    <h1>There is no proof with this id</h1>
    <p>
      No proof <code class="hash">${id}</code> exists on this service. Check the link: proof ids start with
      <code>proof_</code> followed by 26 letters and digits.
    </p>
    <form class="search" action="/proofs" method="get" role="search">
      <label for="q">Search proofs by id, content hash or label</label>
      <div class="search-row">
        <input id="q" name="q" type="search" value="${id}" maxlength="200" /><button type="submit">
          Search
        </button>
      </div>
    </form>
    <p><a href="/proofs">Recent proofs</a> · <a href="/demo">Create a proof</a> · <a href="/">Home</a></p>
  </section>`;
  return renderPage(config, {
    path: `/proof/${encodeURIComponent(id)}`,
    title: 'Proof not found',
    description: 'No proof with this id exists on hashproof.',
    body,
    isNoIndex: true,
  });
}
