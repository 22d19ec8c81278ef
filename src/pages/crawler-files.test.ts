import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, startServer, type TestServer } from '../../test/helper.ts';
import { createProof } from '../../test/pages.ts';

const BASE = 'https://proofs.example.com';
const clock = { nowMs: Date.UTC(2026, 10, 22, 12), now: () => clock.nowMs };

describe('crawler and agent files', () => {
  let server: TestServer;
  before(
    async () =>
      (server = await startServer({
        clock,
        env: { PUBLIC_BASE_URL: BASE, SECURITY_CONTACT: 'security@proofs.example.com' },
      })),
  );
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('/llms.txt follows llmstxt.org: H1, blockquote, text, then H2 sections of links, Optional last', async () => {
    const res = await api(server.baseUrl, '/llms.txt');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    const lines = res.text.split('\n');
    assert.equal(lines[0], '# hashproof');
    assert.equal(lines.filter((line) => line.startsWith('# ')).length, 1, 'exactly one H1');
    const firstContent = lines.slice(1).find((line) => line.trim() !== '');
    assert.match(firstContent ?? '', /^> \S/, 'a blockquote summary follows the H1');
    const sections = lines.filter((line) => line.startsWith('## ')).map((line) => line.slice(3));
    assert.deepEqual(sections, ['API', 'Verify', 'Pages', 'Optional']);
    assert.ok(!lines.some((line) => /^#{3,} /.test(line)), 'no deeper headings');
    // Between the blockquote and the first H2 there is text only; after it, every non-blank line is a link item.
    const firstH2 = lines.findIndex((line) => line.startsWith('## '));
    for (const line of lines.slice(firstH2)) {
      if (line === '' || line.startsWith('## ')) continue;
      assert.match(line, /^- \[[^\]]+\]\(https:\/\/proofs\.example\.com\/[^)]*\): \S/, line);
    }
    for (const path of [
      '/openapi.json',
      '/api/quickstart',
      '/api/actions',
      '/.well-known/x402',
      '/proofs',
      '/demo',
    ]) {
      assert.ok(res.text.includes(`](${BASE}${path})`), path);
    }
    assert.match(res.text, /free \(this instance runs in demo mode/);
    // Before the first H2: the mcpServers configuration of both MCP servers, as /api/quickstart gives it.
    const { mcp } = (await api(server.baseUrl, '/api/quickstart')).body;
    const blocks = [
      ...lines
        .slice(0, firstH2)
        .join('\n')
        .matchAll(/```json\n([\s\S]*?)\n```/g),
    ];
    assert.deepEqual(
      blocks.map((match) => JSON.parse(match[1] ?? '')),
      [mcp.remote.configuration, mcp.local.configuration],
    );
    assert.equal(mcp.remote.configuration.mcpServers.hashproof.url, `${BASE}/mcp`);
    for (const name of [...mcp.remote.tools, ...mcp.local.tools])
      assert.ok(res.text.includes(`\`${name}\``), name);
  });

  test('/robots.txt allows the site, keeps crawlers off the admin API and names the sitemap', async () => {
    const res = await api(server.baseUrl, '/robots.txt');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(
      res.text,
      [
        'User-agent: *',
        'Allow: /',
        'Disallow: /api/accounts',
        'Disallow: /api/api-keys',
        'Disallow: /api/webhooks',
        'Disallow: /metrics',
        '',
        `Sitemap: ${BASE}/sitemap.xml`,
        '',
      ].join('\n'),
    );
  });

  test('/sitemap.xml lists the public pages and the newest proof pages, absolute and escaped', async () => {
    const proof = await createProof(server);
    const res = await api(server.baseUrl, '/sitemap.xml');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
    assert.match(
      res.text,
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<urlset xmlns="http:\/\/www\.sitemaps\.org\/schemas\/sitemap\/0\.9">/,
    );
    assert.match(res.text, /<\/urlset>\n$/);
    const locs = [...res.text.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]);
    for (const path of [
      '/',
      '/demo',
      '/proofs',
      '/dashboard',
      '/agents',
      '/pricing',
      '/actions',
      '/trust',
      '/marketplace',
    ]) {
      assert.ok(locs.includes(`${BASE}${path}`), path);
    }
    assert.ok(
      locs.every((loc) => loc?.startsWith(`${BASE}/`)),
      'every URL on the public host',
    );
    assert.ok(
      res.text.includes(
        `<url><loc>${BASE}/proof/${proof.id}</loc><lastmod>${proof.timestamp}</lastmod></url>`,
      ),
    );
  });

  test('/.well-known/security.txt has RFC 9116 Contact and an Expires computed when served', async () => {
    const res = await api(server.baseUrl, '/.well-known/security.txt');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    const fields = Object.fromEntries(
      res.text
        .trim()
        .split('\n')
        .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
    );
    assert.deepEqual(fields, {
      Contact: 'mailto:security@proofs.example.com',
      Expires: '2027-05-21T12:00:00Z',
      'Preferred-Languages': 'en',
      Canonical: `${BASE}/.well-known/security.txt`,
      Policy: `${BASE}/trust`,
    });
    clock.nowMs += 10 * 86_400_000;
    const later = await api(server.baseUrl, '/.well-known/security.txt');
    assert.match(later.text, /^Expires: 2027-05-31T12:00:00Z$/m);
  });
});

describe('security.txt with a configured contact', () => {
  test('SECURITY_CONTACT is used, a bare address becoming a mailto: URI', async () => {
    for (const [configured, expected] of [
      ['https://example.org/report', 'https://example.org/report'],
      ['sec@example.org', 'mailto:sec@example.org'],
    ]) {
      const server = await startServer({ env: { SECURITY_CONTACT: configured ?? '' } });
      try {
        const res = await api(server.baseUrl, '/.well-known/security.txt');
        assert.match(res.text, new RegExp(`^Contact: ${expected}$`, 'm'));
        const trust = await api(server.baseUrl, '/api/trust');
        assert.equal(trust.body.security.contact, expected);
        assert.equal(trust.body.security.securityTxt, `${server.baseUrl}/.well-known/security.txt`);
        const page = (await api(server.baseUrl, '/trust')).text;
        assert.ok(page.includes(`href="${expected}"`), 'the trust page links the contact');
        assert.ok(page.includes('<a href="/.well-known/security.txt">Security</a>'), 'the footer links it');
      } finally {
        await server.close();
        server.cleanup();
      }
    }
  });
});
