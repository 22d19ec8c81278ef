import type { AnchorsService } from '../anchors/anchors-service.ts';
import { formatUtc, html, type SafeHtml } from './html.ts';
import { hostOf } from '../core/urls.ts';

/** The anchor of a proof as its page shows it (`AnchorsService.anchorOf`). */
export type PageAnchor = NonNullable<Awaited<ReturnType<AnchorsService['anchorOf']>>>;

/**
 * The "Anchors" fact of a proof page: which outside authorities and calendars vouch for the
 * checkpoint that holds the proof, when, and whether a Bitcoin block holds it yet (checked, or only
 * claimed by the calendar), with the downloads.
 */
export function anchorsFact(id: string, anchor: PageAnchor | undefined, enabled: boolean): SafeHtml {
  if (anchor === undefined) {
    return enabled
      ? html`<span class="muted">not yet: the log's newest checkpoint is anchored at regular intervals</span>`
      : html`<span class="muted">none: this service anchors its log with no outside authority</span>`;
  }
  const tokens = anchor.rfc3161.map(
    (t) =>
      html`<li>
        RFC 3161 time-stamp by <code>${hostOf(t.url)}</code> at
        <time datetime="${t.genTime}">${formatUtc(t.genTime)}</time>
      </li>`,
  );
  const calendars = anchor.opentimestamps.map(
    (c) =>
      html`<li>
        OpenTimestamps calendar <code>${hostOf(c.calendar)}</code>:
        ${
          c.status === 'bitcoin'
            ? html`<strong>in Bitcoin block ${String(c.bitcoinHeight)}</strong>
                <span class="muted">(its block header checked)</span>`
            : c.status === 'claimed'
              ? html`claimed in Bitcoin block ${String(c.bitcoinHeight)} by the calendar
                  <span class="muted">(its block header not checked here)</span>`
              : html`<span class="muted">pending in Bitcoin (usually a few hours)</span>`
        }
      </li>`,
  );
  return html`the checkpoint of ${String(anchor.treeSize)} entries that holds this proof:
    <ul class="anchors">
      ${tokens} ${calendars}
    </ul>
    <a href="/api/proofs/${id}/anchors">anchors JSON</a>
    ${
      anchor.opentimestamps.length > 0
        ? html` · <a href="/api/proofs/${id}/proof.ots" download>${id}.ots</a>
            <span class="muted">(OpenTimestamps file of your own file)</span>`
        : ''
    }`;
}
