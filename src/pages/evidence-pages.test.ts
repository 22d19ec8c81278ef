import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, expectError, startServer, type TestServer } from '../../test/helper.ts';
import { createProof, flatten, getPage } from '../../test/pages.ts';
import { eventually } from '../../test/wait.ts';
import type { Proof } from '../proofs/proof-schemas.ts';
import { renderEvidenceChain } from './evidence-chain.ts';

const BASE = 'https://proofs.example.com';
const KEYS = '/.well-known/hashproof-keys.json';
const KINDS = ['signature', 'receipt', 'timestampToken', 'logInclusion', 'anchorRfc3161', 'anchorBitcoin'];

let server: TestServer;
before(async () => (server = await startServer({ env: { PUBLIC_BASE_URL: BASE } })));
after(async () => {
  await server.close();
  server.cleanup();
});

describe('the evidence a proof carries, on the pages and in /api/trust', () => {
  test('/api/trust lists every kind of evidence, keeps its other fields, and /openapi.json describes it', async () => {
    const { body } = await api(server.baseUrl, '/api/trust');
    assert.deepEqual(
      body.evidence.map((item: any) => item.kind),
      KINDS,
    );
    for (const item of body.evidence) {
      for (const field of ['name', 'field', 'proves', 'doesNotProve', 'checkWithoutUs'])
        assert.ok(item[field].length > 10 || field === 'field', `${item.kind}.${field}`);
      assert.ok(Object.values(item.links).length > 0, `${item.kind}: links`);
      for (const url of Object.values<string>(item.links)) assert.ok(url.startsWith(`${BASE}/`), url);
    }
    const kind = (name: string) => body.evidence.find((item: any) => item.kind === name);
    assert.equal(kind('receipt').links.keys, `${BASE}${KEYS}`);
    assert.equal(kind('timestampToken').links.tsaCertificates, `${BASE}/api/tsa/certs.pem`);
    assert.match(kind('timestampToken').command, /^openssl ts -verify /);
    assert.equal(kind('logInclusion').links.checkpoint, `${BASE}/log/checkpoint`);
    assert.match(kind('signature').checkWithoutUs, /cannot be/);
    assert.match(kind('signature').command, /hashproof verify FILE --online/);
    // No outside authority is configured here: the anchors are described, and marked as not issued.
    assert.deepEqual(
      body.evidence.map((item: any) => item.issued),
      [true, true, true, true, false, false],
    );
    // The fields other clients read are still there.
    assert.equal(body.signing.algorithm, 'hmac-sha256');
    assert.ok(body.proves.length > 0 && body.doesNotProve.length > 0);
    assert.equal(body.security.policy, `${BASE}/trust`);

    const openapi = (await api(server.baseUrl, '/openapi.json')).body;
    const schema = JSON.stringify(openapi.paths['/api/trust'].get.responses['200']);
    for (const field of ['evidence', 'doesNotProve', 'checkWithoutUs', 'issued'])
      assert.ok(schema.includes(`"${field}"`), `the documented response has ${field}`);
  });

  test('/trust shows each piece: what it proves, what not, and how to check it without us', async () => {
    const page = await getPage(server, '/trust');
    for (const kind of KINDS) assert.ok(page.includes(`<li id="evidence-${kind}">`), kind);
    assert.ok(page.includes(`<a href="${KEYS}">${KEYS}</a>`));
    assert.ok(page.includes('<code>hashproof verify FILE --online</code>'));
    assert.ok(page.includes('<a href="/api/tsa/certs.pem">/api/tsa/certs.pem</a>'));
    assert.ok(page.includes('<code>/api/proofs/{id}/timestamp.tsr</code>'), 'a template is text, not a link');
    assert.equal(page.match(/not on this instance/g)?.length, 2, 'the two outside anchors');
  });

  test('/agents and /llms.txt link the keys manifest, /agents says how to check a proof offline; / points to /trust', async () => {
    const agents = await getPage(server, '/agents');
    assert.ok(agents.includes(`<a href="${KEYS}">${BASE}${KEYS}</a>`));
    assert.ok(agents.includes(`curl -s ${BASE}${KEYS} &gt; hashproof-keys.json`));
    assert.ok(agents.includes('hashproof verify FILE --keys hashproof-keys.json'));
    // Where the command comes from, and never a bare `npx hashproof` that would fetch someone else's package.
    assert.ok(agents.includes('<code>npm run hashproof -- verify FILE</code>'));
    for (const page of [agents, await getPage(server, '/trust')]) {
      assert.doesNotMatch(page.replace('<code>npx hashproof</code> would fetch', ''), /npx hashproof/);
    }
    const llms = await api(server.baseUrl, '/llms.txt');
    assert.ok(llms.text.includes(`- [Keys manifest](${BASE}${KEYS}): `));
    const home = await getPage(server, '/');
    assert.match(home, /<h2 id="evidence-title">Evidence you can check without us<\/h2>/);
    assert.match(home, /<a href="\/trust">What each piece proves, and how to check it<\/a>/);
  });

  test('the proof page lists its evidence and draws its chain with its own values', async () => {
    const proof = await createProof(server, { label: 'evidence page' });
    const page = await eventually(() => getPage(server, `/proof/${proof.id}`), {
      what: 'the proof page shows the proof in the log',
      until: (shown) => /leaf \d+ of \d+/.test(shown),
    });
    const { leafIndex } = (await api(server.baseUrl, `/api/proofs/${proof.id}`)).body.proof.log;
    const hex = proof.contentHash.slice('sha256:'.length);
    assert.ok(
      page.includes('<figure id="evidence-chain" class="chain" aria-labelledby="evidence-chain-caption">'),
    );
    assert.match(page, /<figcaption id="evidence-chain-caption">[^<]*4 of 5 steps in place/);
    assert.ok(page.includes(`<code class="chain-value">sha256:${hex.slice(0, 12)}…</code>`));
    assert.match(page, new RegExp(`<code class="chain-value">leaf ${leafIndex} of \\d+</code>`));
    assert.ok(page.includes(`<span class="tag tag-yes">leaf ${leafIndex}</span>`));
    assert.ok(page.includes(`<span class="tag tag-yes">${proof.receipt.keyId}</span>`));
    assert.ok(page.includes(`href="/api/proofs/${proof.id}/timestamp.tsr"`));
    assert.ok(page.includes(`<a href="${KEYS}">keys manifest</a>`));
  });

  test('a proof not yet in the log shows those steps pending', () => {
    const proof = {
      id: 'proof_01M81ENN8CHM3NYND1T40S2ZRP',
      timestamp: '2026-11-22T12:00:00.000Z',
      contentHash: `sha256:${'ab'.repeat(32)}`,
      metadataHash: `sha256:${'cd'.repeat(32)}`,
      label: 'pending',
      log: null,
    } as unknown as Proof;
    const chain = flatten(
      renderEvidenceChain(proof, { inclusion: undefined, anchor: undefined, anchorsEnabled: true }).value,
    );
    assert.match(chain, /2 of 5 steps in place/);
    assert.equal(chain.match(/class="chain-step chain-pending"/g)?.length, 3);
    assert.match(chain, /<code class="chain-value">not yet in the log<\/code>/);
    const unanchored = flatten(
      renderEvidenceChain(proof, { inclusion: undefined, anchor: undefined, anchorsEnabled: false }).value,
    );
    assert.match(unanchored, /class="chain-step chain-none"/);
  });
});

describe('without SECURITY_CONTACT', () => {
  test('no address is made up: security.txt is a 404, /trust and /api/trust say none is configured', async () => {
    const txt = await api(server.baseUrl, '/.well-known/security.txt');
    const error = expectError(txt, 404, 'not_found');
    assert.equal(error.details.setting, 'SECURITY_CONTACT');
    const trust = await api(server.baseUrl, '/api/trust');
    assert.equal(trust.body.security.contact, null);
    assert.equal(trust.body.security.securityTxt, null);
    assert.match(trust.body.security.note, /No security contact is configured/);
    const page = await getPage(server, '/trust');
    assert.match(page, /No security contact is configured on this instance/);
    for (const [path, text] of [
      ['/.well-known/security.txt', txt.text],
      ['/api/trust', trust.text],
      ['/trust', page],
    ]) {
      assert.doesNotMatch(text ?? '', /security@/, `${path}: no made-up security@ address`);
    }
    // Nothing points to the missing file.
    for (const path of ['/', '/robots.txt', '/sitemap.xml', '/llms.txt'])
      assert.ok(!(await api(server.baseUrl, path)).text.includes('security.txt'), path);
  });
});
