import assert from 'node:assert/strict';
import { api, notarizeBody, type TestServer } from './helper.ts';
import { startChain, startFacilitator } from './x402-chain.ts';

/** An x402 configuration with a price other than the default, so the pages must read it from there. */
export const X402_ENV = {
  PAYMENT_MODE: 'x402',
  X402_PAY_TO: '0x' + 'ab12'.repeat(10),
  X402_PRICE: '$0.007',
};

/**
 * X402_ENV with the URL of a real facilitator (the official code on a local chain, see x402-chain.ts):
 * in x402 mode the service asks its facilitator what it supports before it starts.
 */
export async function x402Env(): Promise<Record<string, string>> {
  const facilitator = await startFacilitator(await startChain());
  return { ...X402_ENV, X402_FACILITATOR_URL: facilitator.url };
}

/** The label every page test creates: it must appear escaped, never as markup. */
export const XSS_LABEL = '"><script>alert(1)</script>';
export const XSS_ESCAPED = '&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;';

export async function createProof(server: TestServer, overrides: Record<string, unknown> = {}): Promise<any> {
  const res = await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody(overrides) });
  assert.equal(res.status, 200, res.text);
  return res.body.proof;
}

/** Whitespace collapsed, and dropped inside tags, so assertions do not depend on the source layout. */
export function flatten(page: string): string {
  return page.replace(/\s+/g, ' ').replace(/ >/g, '>').replace(/< /g, '<');
}

/** GETs an HTML page and checks what every page must have; returns its text, flattened. */
export async function getPage(server: TestServer, path: string, status = 200): Promise<string> {
  const res = await api(server.baseUrl, path);
  assert.equal(res.status, status, `${path}: ${res.text.slice(0, 300)}`);
  assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8', path);
  assertPageShell(res.text, path);
  assert.match(res.headers.get('content-security-policy') ?? '', /script-src 'self'/);
  return flatten(res.text);
}

/** Title, description, Open Graph, viewport, one stylesheet, and no inline script, style or handler. */
export function assertPageShell(page: string, path: string): void {
  assert.match(page, /^<!doctype html>/, path);
  assert.match(page, /<title>[^<]+<\/title>/, `${path}: title`);
  assert.match(page, /<meta name="description" content="[^"]+" \/>/, `${path}: description`);
  assert.match(page, /<meta name="viewport" content="width=device-width, initial-scale=1" \/>/, path);
  for (const property of ['og:title', 'og:description', 'og:url', 'og:type', 'og:site_name']) {
    assert.match(page, new RegExp(`<meta property="${property}" content="[^"]+" />`), `${path}: ${property}`);
  }
  assert.match(page, /<link rel="stylesheet" href="\/assets\/site\.css\?v=[0-9a-f]{12}" \/>/, path);
  assert.doesNotMatch(page, /<script(?![^>]*\ssrc=)[^>]*>/i, `${path}: inline script`);
  assert.doesNotMatch(page, /<style[\s>]/i, `${path}: inline style element`);
  assert.doesNotMatch(page, /\sstyle=/i, `${path}: style attribute`);
  assert.doesNotMatch(page, /<[a-z][^>]*\son[a-z]+=/i, `${path}: event handler attribute`);
}

/** The label appears escaped, and the raw markup nowhere. */
export function assertEscapedLabel(page: string, path: string): void {
  assert.ok(page.includes(XSS_ESCAPED), `${path}: the escaped label is shown`);
  assert.ok(!page.includes('<script>alert(1)'), `${path}: the label was not escaped`);
}
