import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, expectError, sampleHash, startServer, type TestServer } from '../../test/helper.ts';
import { assertEscapedLabel, createProof, getPage, X402_ENV, x402Env, XSS_LABEL } from '../../test/pages.ts';

const BASE = 'https://proofs.example.com';
const PAY_TO = X402_ENV.X402_PAY_TO;

const PAGES = [
  '/',
  '/demo',
  '/proofs',
  '/dashboard',
  '/agents',
  '/pricing',
  '/actions',
  '/trust',
  '/marketplace',
];

describe('public pages in demo mode', () => {
  let server: TestServer;
  let xss: any;
  before(async () => {
    server = await startServer({ env: { PUBLIC_BASE_URL: BASE } });
    xss = await createProof(server, { label: XSS_LABEL, contentHash: sampleHash(9001) });
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('every page answers 200 HTML with a title, description, Open Graph tags and no inline code', async () => {
    for (const path of PAGES) {
      const page = await getPage(server, path);
      assert.ok(page.includes(`<link rel="canonical" href="${BASE}${path}" />`), `${path}: canonical URL`);
      assert.ok(page.includes('<nav aria-label="Main">'), path);
      assert.ok(page.includes('<a class="skip" href="#main">'), `${path}: skip link`);
    }
  });

  test('pages that list proofs show the attacker-chosen label escaped', async () => {
    for (const path of ['/', '/proofs', '/dashboard', `/proof/${xss.id}`]) {
      const page = await getPage(server, path);
      assertEscapedLabel(page, path);
      assert.ok(page.includes(`href="/proof/${xss.id}"`), `${path} links the proof`);
    }
  });

  test('/ shows live figures and the latest proofs', async () => {
    const before = await api(server.baseUrl, '/api/dashboard/summary');
    const proof = await createProof(server, { label: 'home page figure check' });
    const page = await getPage(server, '/');
    const total = before.body.proofs.total + 1;
    assert.match(
      page,
      new RegExp(`<span class="stat-value">${total}</span><span class="stat-label">proofs in total`),
    );
    assert.ok(page.includes('home page figure check'));
    assert.ok(page.includes(`href="/proof/${proof.id}"`));
    assert.ok(page.includes('demo mode'));
  });

  test('/proofs lists recent proofs newest first, searches, and pages with a cursor', async () => {
    const a = await createProof(server, { label: 'Needle alpha', contentHash: sampleHash(7001) });
    const b = await createProof(server, { label: 'needle beta', contentHash: sampleHash(7002) });
    const recent = await getPage(server, '/proofs');
    assert.ok(recent.indexOf(b.id) < recent.indexOf(a.id), 'newest first');
    assert.match(recent, /Recent proofs/);

    const byLabel = await getPage(server, '/proofs?q=NEEDLE');
    assert.ok(byLabel.includes(a.id) && byLabel.includes(b.id));
    assert.ok(!byLabel.includes(xss.id));
    assert.match(byLabel, /Proofs matching “<span class="query">NEEDLE<\/span>”/);
    assert.match(byLabel, /<meta name="robots" content="noindex" \/>/);

    const byHash = await getPage(
      server,
      `/proofs?q=${encodeURIComponent(sampleHash(7001).toUpperCase().replace('SHA256', 'sha256'))}`,
    );
    assert.ok(byHash.includes(a.id) && !byHash.includes(b.id));

    const hostile = await getPage(server, `/proofs?q=${encodeURIComponent(XSS_LABEL)}`);
    assertEscapedLabel(hostile, '/proofs?q=');

    const none = await getPage(server, '/proofs?q=no-such-label-anywhere');
    assert.match(none, /No proof matches this search/);

    for (let i = 0; i < 26; i++) await createProof(server, { label: `pager ${i}` });
    const first = await getPage(server, '/proofs');
    const next = /href="\/proofs\?cursor=([A-Za-z0-9_-]+)"/.exec(first)?.[1];
    assert.ok(next, 'a link to older proofs');
    const second = await getPage(server, `/proofs?cursor=${next}`);
    assert.ok(second.includes('Back to the newest'));
    assert.ok(!second.includes('pager 25'), 'the second page starts after the first');
  });

  test('/demo offers in-browser hashing and creation in demo mode', async () => {
    const page = await getPage(server, '/demo');
    assert.match(page, /<form id="demo-form" class="demo" data-mode="demo" hidden>/);
    assert.match(page, /<input type="file" id="demo-file"/);
    assert.match(
      page,
      /<button type="submit" id="demo-submit" class="button" disabled>Create proof<\/button>/,
    );
    assert.match(page, /maxlength="120"/);
    assert.match(page, /The file never leaves your machine/);
    assert.match(page, /<noscript>/);
    assert.match(page, /<script src="\/assets\/site\.js\?v=[0-9a-f]{12}" defer><\/script>/);
  });

  test('/pricing, /agents, /actions, /trust and /marketplace show the live configuration', async () => {
    const pricing = await getPage(server, '/pricing');
    assert.match(pricing, /<p class="price">Free<\/p>/);
    assert.match(pricing, /no rate limit on this instance/);
    assert.match(pricing, /at most 8,192 bytes of JSON/);
    const agents = await getPage(server, '/agents');
    assert.ok(agents.includes(`href="${BASE}/llms.txt"`));
    assert.ok(agents.includes(`curl -s ${BASE}/api/proof/notarize`));
    // Both MCP configurations, as /api/quickstart gives them, in blocks a reader copies as they are.
    const { mcp } = (await api(server.baseUrl, '/api/quickstart')).body;
    const block = (id: string) => {
      const text = new RegExp(`<code id="${id}">([^<]*)</code>`).exec(agents)?.[1] ?? '';
      return JSON.parse(text.replaceAll('&quot;', '"').replaceAll('&amp;', '&'));
    };
    assert.deepEqual(block('mcp-remote-config'), mcp.remote.configuration);
    assert.deepEqual(block('mcp-local-config'), mcp.local.configuration);
    assert.ok(agents.includes(`<code>${BASE}/mcp</code>`));
    assert.ok(agents.includes('<section aria-labelledby="mcp-title">'));
    const actions = await getPage(server, '/actions');
    for (const name of ['create_proof', 'verify_proof', 'get_proof', 'search_proofs', 'list_recent_proofs']) {
      assert.ok(actions.includes(`<code>${name}</code>`), name);
    }
    const trust = await getPage(server, '/trust');
    assert.ok(trust.includes(server.ctx.keyring.active.keyId));
    assert.match(trust, /No security contact is configured on this instance/);
    const marketplace = await getPage(server, '/marketplace');
    assert.match(marketplace, /Timestamped hash proof/);
    assert.match(marketplace, /<strong>Free<\/strong>/);
  });

  test('the stylesheet and script are served with caching and an ETag', async () => {
    for (const [path, type] of [
      ['/assets/site.css', 'text/css; charset=utf-8'],
      ['/assets/site.js', 'text/javascript; charset=utf-8'],
    ] as const) {
      const res = await api(server.baseUrl, path);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), type);
      assert.match(res.headers.get('cache-control') ?? '', /max-age=86400/);
      const etag = res.headers.get('etag') ?? '';
      assert.ok(res.text.length > 1000);
      const again = await api(server.baseUrl, path, { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
    }
  });

  test('an unknown page keeps the JSON 404 envelope', async () => {
    expectError(await api(server.baseUrl, '/no-such-page'), 404, 'not_found');
  });
});

describe('public pages in x402 mode', () => {
  let server: TestServer;
  before(async () => (server = await startServer({ env: { ...(await x402Env()), PUBLIC_BASE_URL: BASE } })));
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('/demo hashes but shows the price instead of creating', async () => {
    const page = await getPage(server, '/demo');
    assert.match(page, /data-mode="x402"/);
    assert.doesNotMatch(page, /id="demo-submit"/);
    assert.match(page, /Creating a proof costs \$0\.007/);
    assert.match(page, /<span data-fill-hash>/);
    assert.match(page, /href="\/\.well-known\/x402"/);
  });

  test('/pricing, /marketplace and the header state the configured terms', async () => {
    const pricing = await getPage(server, '/pricing');
    assert.match(pricing, /<p class="price">\$0\.007<\/p>/);
    assert.ok(pricing.includes(PAY_TO));
    assert.match(pricing, /Base <code>eip155:8453<\/code>/);
    assert.match(pricing, /x402 version 2, scheme <code>exact<\/code>/);
    const marketplace = await getPage(server, '/marketplace');
    assert.match(marketplace, /<strong>\$0\.007<\/strong> per call/);
    const home = await getPage(server, '/');
    assert.match(home, /\$0\.007 per proof/);
  });
});

describe('rate limit', () => {
  let server: TestServer;
  before(
    async () => (server = await startServer({ env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' } })),
  );
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('static assets are exempt; pages are limited like the API', async () => {
    for (let i = 0; i < 6; i++) {
      const res = await api(server.baseUrl, '/assets/site.css');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('ratelimit'), null);
    }
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await api(server.baseUrl, '/pricing')).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    const pricing = await api(server.baseUrl, '/api/capabilities');
    assert.equal(pricing.status, 429);
  });
});
