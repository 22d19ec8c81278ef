import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, sampleHash, startServer, type TestServer } from '../../test/helper.ts';
import { assertEscapedLabel, createProof, getPage, XSS_ESCAPED, XSS_LABEL } from '../../test/pages.ts';
import { eventually } from '../../test/wait.ts';

const BASE = 'https://proofs.example.com';
let server: TestServer;
before(async () => (server = await startServer({ env: { PUBLIC_BASE_URL: BASE } })));
after(async () => {
  await server.close();
  server.cleanup();
});

describe('GET /proof/{id}', () => {
  test('shows what was proven: label, hash, UTC time, live verification, metadata keys, links', async () => {
    const proof = await createProof(server, {
      contentHash: sampleHash(51),
      label: 'Thesis draft v3',
      metadata: { repo: 'acme/site', run: 42 },
    });
    const page = await getPage(server, `/proof/${proof.id}`);
    assert.match(page, /<h1 class="proof-title">Thesis draft v3<\/h1>/);
    assert.ok(page.includes(proof.contentHash));
    assert.ok(page.includes(proof.metadataHash));
    assert.ok(page.includes(proof.signature), 'the page shows the signature of the proof document');
    assert.ok(page.includes(`<time datetime="${proof.timestamp}" data-local>`));
    assert.ok(page.includes(proof.timestamp.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')));
    assert.ok(page.includes(`data-local-for="${proof.timestamp}"`), 'a slot for the local time');
    assert.match(page, /Signature verified/);
    assert.match(page, /<li><code>repo<\/code><\/li>\s*<li><code>run<\/code><\/li>/);
    assert.ok(page.includes(`href="/api/verify/proofs/${proof.id}"`));
    assert.ok(page.includes(`href="/api/proofs/${proof.id}"`));
    assert.ok(page.includes(`<link rel="canonical" href="${BASE}/proof/${proof.id}" />`));
    assert.ok(page.includes(`<meta property="og:type" content="article" />`));
    assert.ok(
      page.includes(`[![hashproof proof](${BASE}/proof/${proof.id}/badge.svg)](${BASE}/proof/${proof.id})`),
    );
    assert.match(page, new RegExp(`<img\\s+src="/proof/${proof.id}/badge.svg"`));
    assert.ok(page.includes(`curl -s ${BASE}/api/verify/proofs/${proof.id}`));
    assert.ok(page.includes(`data-compare="${proof.contentHash}"`), 'the in-browser file check');
    assert.match(page, /<script src="\/assets\/site\.js\?v=[0-9a-f]{12}" defer><\/script>/);
    assert.ok(page.includes(`href="/api/proofs/${proof.id}/timestamp.tsr"`), 'the RFC 3161 token');
  });

  test('shows the log entry once the sequencer integrated the proof, with its inclusion proof', async () => {
    const proof = await createProof(server, { contentHash: sampleHash(52) });
    const page = await eventually(() => getPage(server, `/proof/${proof.id}`), {
      what: 'the page shows the log entry',
      until: (shown) => shown.includes('inclusion proof'),
    });
    const { leafIndex, origin } = (await api(server.baseUrl, `/api/proofs/${proof.id}`)).body.proof.log;
    assert.equal(origin, 'proofs.example.com/log');
    assert.ok(
      page.includes(`entry <strong>${leafIndex}</strong> of <code>proofs.example.com/log</code>`),
      page,
    );
    assert.ok(page.includes(`href="/api/proofs/${proof.id}/inclusion"`));
    assert.ok(page.includes(`href="/api/proofs/${proof.id}/tlog-proof"`));
    // The page shows the audit path and the signed checkpoint of the tree it leads to.
    const shown = /Inclusion proof against the tree of (\d+) entries/.exec(page);
    assert.ok(shown, 'the inclusion proof is on the page');
    const inclusion = (await api(server.baseUrl, `/api/proofs/${proof.id}/inclusion?treeSize=${shown[1]}`))
      .body;
    assert.ok(page.includes(`<code class="hash">${inclusion.rootHash}</code>`));
    for (const hash of inclusion.hashes as string[])
      assert.ok(page.includes(`<code class="hash">${hash}</code>`));
    assert.ok(inclusion.checkpoint.startsWith('proofs.example.com/log\n'));
    // getPage folds white space, so the note's lines are compared folded too.
    const folded = inclusion.checkpoint.replace(/\s+/g, ' ');
    assert.ok(page.includes(`<pre class="checkpoint">${folded}</pre>`), page);
  });

  test('escapes an attacker-chosen label and metadata key names everywhere on the page', async () => {
    const proof = await createProof(server, {
      label: XSS_LABEL,
      metadata: { '<img src=x onerror=alert(2)>': 1, "it's": 2 },
    });
    const page = await getPage(server, `/proof/${proof.id}`);
    assertEscapedLabel(page, '/proof');
    assert.ok(page.includes(`<title>Proof: ${XSS_ESCAPED} · hashproof</title>`));
    assert.ok(page.includes(`<meta property="og:title" content="Proof: ${XSS_ESCAPED} · hashproof" />`));
    assert.ok(page.includes('<code>&lt;img src=x onerror=alert(2)&gt;</code>'));
    assert.ok(page.includes('<code>it&#39;s</code>'));
    assert.ok(!page.includes('<img src=x'));
  });

  test('a proof whose stored signature no longer checks says so', async () => {
    const proof = await createProof(server);
    await server.ctx.database.db
      .updateTable('proofs')
      .set({ label: 'forged label' })
      .where('id', '=', proof.id)
      .execute();
    const page = await getPage(server, `/proof/${proof.id}`);
    assert.match(page, /Signature does not verify/);
    assert.doesNotMatch(page, /Signature verified/);
    const badge = await api(server.baseUrl, `/proof/${proof.id}/badge.svg`);
    assert.match(badge.text, /signature invalid/);
    assert.match(badge.text, /fill="#b91c1c"/);
  });

  test('an unknown, malformed or hostile id is a friendly HTML 404 page', async () => {
    for (const id of [
      'proof_01ARZ3NDEKTSV4RRFFQ69G5FAV',
      'nope',
      encodeURIComponent('"><script>alert(1)</script>'),
    ]) {
      const page = await getPage(server, `/proof/${id}`, 404);
      assert.match(page, /There is no proof with this id/);
      assert.match(page, /<meta name="robots" content="noindex" \/>/);
      assert.match(page, /<form class="search" action="\/proofs" method="get" role="search">/);
      assert.ok(!page.includes('<script>alert(1)'));
    }
    const hostile = await getPage(server, `/proof/${encodeURIComponent(XSS_LABEL)}`, 404);
    assert.ok(hostile.includes(`value="${XSS_ESCAPED}"`), 'the id is escaped in the search box');
  });
});

describe('GET /proof/{id}/badge.svg', () => {
  test('an SVG embeddable from any site, green with the proof date while it verifies', async () => {
    const proof = await createProof(server, { label: XSS_LABEL });
    const res = await api(server.baseUrl, `/proof/${proof.id}/badge.svg`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
    assert.equal(res.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.equal(res.headers.get('content-security-policy'), "default-src 'none'; style-src 'unsafe-inline'");
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('cache-control') ?? '', /max-age=300/);
    assert.match(
      res.text,
      /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+" height="20" role="img"/,
    );
    assert.ok(res.text.includes(`verified ${proof.timestamp.slice(0, 10)}`));
    assert.ok(res.text.includes('fill="#15803d"'));
    assert.ok(res.text.includes(XSS_ESCAPED), 'the label is in the title, escaped');
    assert.ok(!res.text.includes('<script'), 'no markup from the label');
  });

  test('an unknown proof gets a grey "not found" badge with status 404', async () => {
    for (const id of ['proof_01ARZ3NDEKTSV4RRFFQ69G5FAV', 'nope']) {
      const res = await api(server.baseUrl, `/proof/${id}/badge.svg`);
      assert.equal(res.status, 404);
      assert.equal(res.headers.get('content-type'), 'image/svg+xml; charset=utf-8');
      assert.match(res.text, /not found/);
    }
  });
});
