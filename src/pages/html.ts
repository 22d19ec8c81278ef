/**
 * The HTML template helper of every page (docs/decisions.md §8). `html` escapes each interpolated
 * string with the one `escapeHtml`, so a label or a metadata key name can never become markup; only
 * values that are already `SafeHtml` (other templates) pass through as they are.
 */

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Maps `& < > " '` to entities: safe in text and in quoted attribute values, in HTML and in XML (SVG). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Markup that has been built by `html` (or is a trusted constant), so it is not escaped again. */
export class SafeHtml {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

type Interpolation = SafeHtml | string | number | boolean | null | undefined | readonly Interpolation[];

function render(value: Interpolation): string {
  if (value === null || value === undefined || value === false || value === true) return '';
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) return (value as readonly Interpolation[]).map(render).join('');
  return escapeHtml(typeof value === 'number' ? String(value) : (value as string));
}

/** Tagged template: `html\`<p>${label}</p>\`` escapes `label`; booleans and null render nothing. */
export function html(strings: TemplateStringsArray, ...values: Interpolation[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Marks a constant, already-safe string as markup. Never pass anything a client chose. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** JSON for a `<pre>` block: pretty-printed, then escaped like any other text. */
export function jsonBlock(value: unknown): SafeHtml {
  return html`<pre class="code"><code>${JSON.stringify(value, null, 2)}</code></pre>`;
}

/** Made once: building a number format took about 0.3 ms, and a page shows several numbers. */
const COUNT_FORMAT = new Intl.NumberFormat('en-US');

/** A number with thousands separators, the same on every server locale. */
export function formatCount(value: number): string {
  return COUNT_FORMAT.format(value);
}

/** `2026-11-22 11:01:14 UTC`: the unambiguous form shown on pages (the local time is added in the browser). */
export function formatUtc(iso: string): string {
  return iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

/** Text whose `backticked` parts are code, as in the schema descriptions: escaped, then marked up. */
export function prose(text: string): SafeHtml {
  return new SafeHtml(
    text
      .split('`')
      .map((part, i) => (i % 2 === 1 ? `<code>${escapeHtml(part)}</code>` : escapeHtml(part)))
      .join(''),
  );
}

/**
 * A section of a page, named by its heading: the heading's id and the section's `aria-labelledby` are
 * both made from `name` (`<name>-title`), here only, so they always agree.
 */
export function section(
  name: string,
  heading: Interpolation,
  content: SafeHtml,
  classes: { section?: string; heading?: string } = {},
): SafeHtml {
  const classOf = (value: string | undefined) => (value === undefined ? '' : html` class="${value}"`);
  return html`<section${classOf(classes.section)} aria-labelledby="${name}-title">
    <h2 id="${name}-title"${classOf(classes.heading)}>${heading}</h2>
    ${content}
  </section>`;
}
