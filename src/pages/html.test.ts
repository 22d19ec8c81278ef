import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderBadge } from './badge-svg.ts';
import { escapeHtml, html, prose, trusted } from './html.ts';

test('escapeHtml maps the five characters that matter in text and quoted attributes', () => {
  assert.equal(
    escapeHtml(`<a href="x" title='y'>&amp;</a>`),
    '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;',
  );
  assert.equal(escapeHtml('plain ünïcode ✓'), 'plain ünïcode ✓');
});

test('html escapes every interpolated string, passes nested templates through, and drops booleans', () => {
  const label = '"><script>alert(1)</script>';
  const inner = html`<b>${label}</b>`;
  const page = html`<p title="${label}">${inner}${[html`<i>${'&'}</i>`, 1]}${false}${null}${undefined}</p>`;
  assert.equal(
    page.value,
    '<p title="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"><b>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</b><i>&amp;</i>1</p>',
  );
  assert.equal(html`${trusted('<br>')}`.value, '<br>');
});

test('prose turns backticked parts into code and escapes everything', () => {
  assert.equal(
    prose('use `sha256:<hex>` & <b>').value,
    'use <code>sha256:&lt;hex&gt;</code> &amp; &lt;b&gt;',
  );
});

test('the badge escapes its title and sizes its text', () => {
  const svg = renderBadge({ state: 'verified', message: 'verified 2026-11-22', title: '<x>"' });
  assert.match(svg, /<title>&lt;x&gt;&quot;<\/title>/);
  assert.match(svg, /aria-label="&lt;x&gt;&quot;"/);
  const width = Number(/^<svg[^>]* width="(\d+)"/.exec(svg)?.[1]);
  assert.ok(width > 150 && width < 220, `width ${width}`);
});
