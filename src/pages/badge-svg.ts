import { escapeHtml } from './html.ts';

type BadgeState = 'verified' | 'invalid' | 'not_found';

const COLORS: Record<BadgeState, string> = {
  verified: '#15803d',
  invalid: '#b91c1c',
  not_found: '#6b7280',
};

const FONT_SIZE = 11;
const PADDING = 6;

/**
 * Width of a text in Verdana 11px, close enough to size the badge; `textLength` then makes every renderer
 * draw the text at exactly that width, whatever font it falls back to.
 */
function textWidth(text: string): number {
  let width = 0;
  for (const c of text) {
    if (/[iIl.:,;|!' ]/.test(c)) width += 3.9;
    else if (/[mwMW]/.test(c)) width += 10.7;
    else if (/[A-Z]/.test(c)) width += 7.6;
    else if (/[frtj()-]/.test(c)) width += 4.6;
    else width += 6.9;
  }
  return Math.ceil(width);
}

interface BadgeOptions {
  state: BadgeState;
  /** The right-hand text: `verified 2026-11-22`, `signature invalid`, `not found`. */
  message: string;
  /** The accessible name and tooltip; may carry the attacker-chosen label (it is escaped here). */
  title: string;
}

/** A shields.io-style badge: "hashproof | <message>". Pure SVG attributes, no style, no script. */
export function renderBadge({ state, message, title }: BadgeOptions): string {
  const left = 'hashproof';
  const leftWidth = textWidth(left) + 2 * PADDING;
  const rightWidth = textWidth(message) + 2 * PADDING;
  const width = leftWidth + rightWidth;
  const text = (content: string, center: number, textLength: number) =>
    `<text x="${center}" y="15" fill="#010101" fill-opacity=".3" textLength="${textLength}" aria-hidden="true">${escapeHtml(content)}</text>` +
    `<text x="${center}" y="14" textLength="${textLength}">${escapeHtml(content)}</text>`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="20" role="img" aria-label="${escapeHtml(title)}">` +
    `<title>${escapeHtml(title)}</title>` +
    '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>' +
    `<clipPath id="r"><rect width="${width}" height="20" rx="3" fill="#fff"/></clipPath>` +
    `<g clip-path="url(#r)"><rect width="${leftWidth}" height="20" fill="#333"/>` +
    `<rect x="${leftWidth}" width="${rightWidth}" height="20" fill="${COLORS[state]}"/>` +
    `<rect width="${width}" height="20" fill="url(#s)"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="${FONT_SIZE}">` +
    text(left, leftWidth / 2, textWidth(left)) +
    text(message, leftWidth + rightWidth / 2, textWidth(message)) +
    '</g></svg>\n'
  );
}
