import type { Config } from '../config.ts';
import { PAID_VIA, type DashboardSummary, type PaidVia } from '../stats/stats-service.ts';
import { formatCount, formatUtc, html, section, type SafeHtml } from './html.ts';
import { renderPage } from './layout.ts';

const VIA_NAMES: Record<PaidVia, string> = {
  demo: 'Demo (free)',
  x402: 'Paid with x402',
  api_key: 'API key',
};

/** Proofs per day as SVG bars (attributes only: the CSP forbids inline styles). */
function dailyChart(daily: DashboardSummary['daily']): SafeHtml {
  const width = 700;
  const height = 160;
  const axis = 20;
  const max = Math.max(1, ...daily.map((day) => day.count));
  const slot = width / daily.length;
  const bars = daily.map((day, i) => {
    const barHeight = Math.round((day.count / max) * (height - axis - 16));
    const x = Math.round(i * slot + slot * 0.15);
    const y = height - axis - barHeight;
    const label = `${day.date}: ${day.count} ${day.count === 1 ? 'proof' : 'proofs'}`;
    return html`<g
      ><title>${label}</title
      ><rect
        x="${x}"
        y="${y}"
        width="${Math.round(slot * 0.7)}"
        height="${Math.max(barHeight, 1)}"
        rx="2"
        fill="${day.count > 0 ? '#15803d' : '#d1d5db'}"
      />${day.count > 0 ? html`<text x="${x + Math.round(slot * 0.35)}" y="${y - 4}" text-anchor="middle" font-size="11" fill="#374151">${day.count}</text>` : ''}<text
        x="${x + Math.round(slot * 0.35)}"
        y="${height - 5}"
        text-anchor="middle"
        font-size="10"
        fill="#6b7280"
        >${day.date.slice(5)}</text
      ></g
    >`;
  });
  return html`<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-labelledby="chart-title">
    <title id="chart-title">Proofs per UTC day, ${daily[0]?.date ?? ''} to ${daily.at(-1)?.date ?? ''}</title>
    ${bars}
  </svg>`;
}

/**
 * A row's share of all proofs, in whole percent. A share that is neither none nor all never shows as
 * 0 % or 100 %: one proof in a thousand is "<1%", all but one ">99%".
 */
export function formatShare(count: number, total: number): string {
  if (count === 0 || total === 0) return '0%';
  if (count >= total) return '100%';
  const percent = Math.round((count / total) * 100);
  return percent === 0 ? '<1%' : percent === 100 ? '>99%' : `${percent}%`;
}

/** `/dashboard`: the figures of /api/dashboard/summary, server-rendered. */
export function renderDashboard(config: Config, summary: DashboardSummary): string {
  const { proofs } = summary;
  const body = html` <h1>Dashboard</h1>
    <p class="lead">
      Live figures of this instance, as of
      <time datetime="${summary.generatedAt}">${formatUtc(summary.generatedAt)}</time>. The same data as JSON:
      <a href="/api/dashboard/summary">/api/dashboard/summary</a>.
    </p>
    <section class="stats" aria-label="Totals">
      <div class="stat">
        <span class="stat-value">${formatCount(proofs.today)}</span
        ><span class="stat-label">proofs today (since 00:00 UTC)</span>
      </div>
      <div class="stat">
        <span class="stat-value">${formatCount(proofs.last7Days)}</span
        ><span class="stat-label">in the last 7 days</span>
      </div>
      <div class="stat">
        <span class="stat-value">${formatCount(proofs.total)}</span><span class="stat-label">in total</span>
      </div>
    </section>
    ${section(
      'daily',
      `Activity, last ${summary.daily.length} days`,
      html`${dailyChart(summary.daily)}
        <details>
          <summary>Figures by day</summary>
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col" class="num">Proofs</th>
              </tr>
            </thead>
            <tbody>
              ${summary.daily.map(
                (day) =>
                  html`<tr>
                    <td>${day.date}</td>
                    <td class="num">${formatCount(day.count)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>
        </details>`,
    )}
    ${section(
      'via',
      'How proofs were paid for',
      html`<table class="table">
        <thead>
          <tr>
            <th scope="col">Paid via</th>
            <th scope="col" class="num">Proofs</th>
            <th scope="col" class="num">Share</th>
          </tr>
        </thead>
        <tbody>
          ${PAID_VIA.map(
            (via) =>
              html`<tr>
                <td>${VIA_NAMES[via]} <code>${via}</code></td>
                <td class="num">${formatCount(proofs.byCreatedVia[via])}</td>
                <td class="num">${formatShare(proofs.byCreatedVia[via], proofs.total)}</td>
              </tr>`,
          )}
        </tbody>
      </table>`,
    )}
    ${section(
      'recent',
      'Recent activity',
      html`${
        summary.recent.length === 0
          ? html`<p class="empty">No proofs yet.</p>`
          : html`<ol class="proof-list">
              ${summary.recent.map(
                (proof) =>
                  html`<li>
                    <a class="proof-label" href="/proof/${proof.id}">${proof.label}</a>
                    <span class="proof-meta"
                      ><span class="tag">${proof.paidVia}</span>
                      <time datetime="${proof.timestamp}">${formatUtc(proof.timestamp)}</time></span
                    >
                  </li>`,
              )}
            </ol>`
      }`,
    )}`;
  return renderPage(config, {
    path: '/dashboard',
    title: 'Dashboard',
    description:
      'Live figures of hashproof: proofs today and in total, by payment mode, and recent activity.',
    body,
  });
}
