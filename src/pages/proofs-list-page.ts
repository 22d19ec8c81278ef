import type { Config } from '../config.ts';
import type { Proof } from '../proofs/proof-schemas.ts';
import { html } from './html.ts';
import { proofList } from './home-pages.ts';
import { renderPage } from './layout.ts';

interface ProofsListView {
  /** The search text as typed; empty for the recent list. */
  q: string;
  proofs: Proof[];
  nextCursor: string | null;
  isFirstPage: boolean;
}

/** `/proofs`: recent proofs, newest first, and search (the same matching as /api/proofs/search). */
export function renderProofsList(config: Config, view: ProofsListView): string {
  const { q, proofs, nextCursor } = view;
  const older =
    nextCursor === null
      ? ''
      : html`<p class="pager">
          <a
            class="button button-quiet"
            href="/proofs?${new URLSearchParams({ ...(q ? { q } : {}), cursor: nextCursor }).toString()}"
            >Older proofs</a
          >
        </p>`;
  const heading = q
    ? html`<h2 id="list-title">Proofs matching “<span class="query">${q}</span>”</h2>`
    : html`<h2 id="list-title">Recent proofs</h2>`;
  const body = html` <h1>Proofs</h1>
    <p class="lead">
      Every proof is public. Search by proof id, content hash, metadata hash or account id (exact), or by part
      of a label.
    </p>
    <form class="search" action="/proofs" method="get" role="search">
      <label for="q">Search proofs</label>
      <div class="search-row">
        <input
          id="q"
          name="q"
          type="search"
          value="${q}"
          maxlength="200"
          placeholder="sha256:…, proof_… or words of a label"
        /><button type="submit">Search</button>
      </div>
    </form>
    <section aria-labelledby="list-title">
      ${heading} ${proofList(proofs, q ? 'No proof matches this search.' : 'No proofs yet.')} ${older}
      ${view.isFirstPage ? '' : html`<p><a href="/proofs${q ? `?q=${encodeURIComponent(q)}` : ''}">Back to the newest</a></p>`}
    </section>
    <p class="muted">
      As JSON: <a href="/api/proofs/recent">/api/proofs/recent</a> and
      <a href="/api/proofs/search">/api/proofs/search</a>.
    </p>`;
  return renderPage(config, {
    path: '/proofs',
    title: q ? `Proofs matching “${q}”` : 'Recent proofs',
    description: 'Recent public proofs on hashproof, newest first, and search by hash, id or label.',
    body,
    hasScript: false,
    isNoIndex: q !== '' || !view.isFirstPage,
  });
}
