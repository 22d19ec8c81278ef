import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { leafHash, verifyInclusion } from '../core/merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import {
  api,
  expectError,
  loggedProof,
  makeDataDir,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { opensslVerifies, startOpensslTsa, type OpensslTsa } from '../../test/openssl-tsa.ts';
import { eventually } from '../../test/wait.ts';

/** Anchors by an outside RFC 3161 authority (OpenSSL's own TSA), checked with OpenSSL against its root. */
describe('anchors by an outside time-stamping authority', () => {
  let tsa: OpensslTsa;
  let server: TestServer;
  before(async () => {
    tsa = await startOpensslTsa();
    server = await startServer({
      env: { ANCHOR_TSA_URLS: tsa.url, ANCHOR_INTERVAL_MS: '100', ANCHOR_ALLOW_PRIVATE_URLS: 'true' },
    });
  });
  after(async () => {
    await server.close();
    server.cleanup();
    await tsa.close();
  });

  const notarize = async (n: number) => {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(n) }),
    });
    assert.equal(res.status, 200, res.text);
    return res.body.proof.id as string;
  };
  const anchorsOf = (id: string) =>
    eventually(() => api(server.baseUrl, `/api/proofs/${id}/anchors`), {
      what: `the anchor of ${id}`,
      until: (res) => res.status === 200,
    });

  test('before its checkpoint is anchored a proof answers 409 not_yet_anchored, then its anchor', async () => {
    tsa.setMode('hold');
    const id = await notarize(1);
    await loggedProof(server.baseUrl, id);
    const early = await api(server.baseUrl, `/api/proofs/${id}/anchors`);
    expectError(early, 409, 'not_yet_anchored');
    assert.equal(early.headers.get('retry-after'), '1');
    assert.equal((await api(server.baseUrl, `/api/proofs/${id}/proof.ots`)).status, 409);
    tsa.setMode('ok');
    const { body } = await anchorsOf(id);
    assert.equal(body.proofId, id);
    assert.equal(body.rfc3161.length, 1);
    assert.equal(body.rfc3161[0].url, tsa.url);
    assert.deepEqual(body.opentimestamps, []);
  });

  test('the token is over the checkpoint bytes, verifies with OpenSSL and the authority root, and tampering fails', async () => {
    const id = await notarize(2);
    const { body } = await anchorsOf(id);
    const checkpoint = Buffer.from(body.checkpoint, 'utf8');
    const token = Buffer.from(body.rfc3161[0].token, 'base64');
    assert.equal(await opensslVerifies(tsa, checkpoint, token), true);
    // Every tampered case is rejected: another checkpoint, a changed byte of the token, another root.
    const otherCheckpoint = Buffer.from(
      body.checkpoint.replace(/\n(\d+)\n/, (_m: string, n: string) => `\n${Number(n) + 1}\n`),
    );
    assert.equal(await opensslVerifies(tsa, otherCheckpoint, token), false);
    const flipped = Buffer.from(token);
    flipped[flipped.length - 10]! ^= 1;
    assert.equal(await opensslVerifies(tsa, checkpoint, flipped), false);
    const stranger = await startOpensslTsa('Stranger');
    try {
      assert.equal(await opensslVerifies(stranger, checkpoint, token), false);
    } finally {
      await stranger.close();
    }
    // The anchored checkpoint is the log's own, signed with its key, and holds the proof.
    const keys = (await api(server.baseUrl, '/.well-known/hashproof-keys.json')).body;
    const vkey = keys.keys.find((k: { verifierKey?: string }) => k.verifierKey)?.verifierKey as string;
    const parsed = parseCheckpoint(openNote(body.checkpoint, parseVerifierKey(vkey)));
    assert.equal(parsed.size, body.treeSize);
    assert.equal(Buffer.from(parsed.rootHash).toString('base64'), body.rootHash);
    const leaf = (await api(server.baseUrl, `/api/verify/proofs/${id}`)).body.signingMessage as string;
    const inclusion = body.inclusion;
    assert.equal(inclusion.treeSize, body.treeSize);
    assert.ok(
      verifyInclusion(
        inclusion.leafIndex,
        inclusion.treeSize,
        leafHash(Buffer.from(leaf, 'utf8')),
        inclusion.hashes.map((h: string) => Buffer.from(h, 'base64')),
        Buffer.from(body.rootHash, 'base64'),
      ),
    );
    // The proof page names the authority and when it vouched.
    const page = (await api(server.baseUrl, `/proof/${id}`)).text;
    assert.match(page, new RegExp(`RFC 3161 time-stamp by <code>${new URL(tsa.url).host}</code>`));
    assert.ok(page.includes(`datetime="${body.rfc3161[0].genTime}"`));
    // Its chain of evidence ends with that outside time-stamp, in place.
    const chain = page.replace(/\s+/g, ' ');
    assert.match(
      chain,
      new RegExp(
        `<li class="chain-step chain-done"> <span class="chain-title">Outside time-stamps</span> <code class="chain-value">RFC 3161 by ${new URL(tsa.url).host} at `,
      ),
    );
    assert.match(chain, /5 of 5 steps in place/);
    // The authority saw the checkpoint's hash, never anything of the proof itself.
    const imprint = createHash('sha256').update(checkpoint).digest('hex');
    assert.ok(tsa.imprints.items.includes(imprint));
  });

  test('/api/log/anchors lists anchored checkpoints newest first, page by page', async () => {
    for (let n = 10; n < 13; n++) await anchorsOf(await notarize(n));
    const first = await api(server.baseUrl, '/api/log/anchors?limit=2');
    assert.equal(first.status, 200);
    assert.equal(first.body.anchors.length, 2);
    const [a, b] = first.body.anchors;
    assert.ok(a.treeSize > b.treeSize);
    assert.equal(typeof first.body.nextCursor, 'string');
    const second = await api(server.baseUrl, `/api/log/anchors?limit=2&cursor=${first.body.nextCursor}`);
    assert.ok(second.body.anchors.every((x: { treeSize: number }) => x.treeSize < b.treeSize));
    // Each checkpoint is sent once; again only after a request that failed (a timeout under load, say),
    // and every such failure is logged with the authority's address.
    const sent = tsa.imprints.items;
    const failed = server.logs.filter(
      (line) => line.includes('anchors:') && line.includes(`"endpoint":"${tsa.url}"`),
    ).length;
    assert.ok(
      sent.length - new Set(sent).size <= failed,
      `each checkpoint was sent to the authority once, but for ${failed} failed requests: ${sent.join(' ')}`,
    );
    expectError(await api(server.baseUrl, '/api/log/anchors?cursor=abc'), 400, 'invalid_request');
    expectError(await api(server.baseUrl, '/api/log/anchors?limit=101'), 400, 'invalid_request');
    expectError(await api(server.baseUrl, '/api/proofs/pf_nope/anchors'), 404, 'not_found');
  });

  test('an authority that is down delays anchors, never proofs, and shows in /api/status until it recovers', async () => {
    tsa.setMode('down');
    const id = await notarize(20);
    await loggedProof(server.baseUrl, id);
    const failing = await eventually(() => api(server.baseUrl, '/api/status'), {
      what: 'the failing authority in /api/status',
      until: (res) => res.body.components.anchors.ok === false,
    });
    const endpoint = failing.body.components.anchors.endpoints[0];
    assert.equal(endpoint.url, tsa.url);
    assert.equal(endpoint.state, 'failing');
    assert.match(endpoint.lastError, /HTTP 503/);
    assert.equal(failing.body.status, 'operational');
    await server.logged(
      (lines) => lines.some((l) => l.includes('anchors:') && l.includes('HTTP 503')),
      'a log line',
    );
    // While it is down, proofs are created as ever.
    for (let n = 21; n < 26; n++) await notarize(n);
    tsa.setMode('ok');
    await anchorsOf(id);
    const recovered = await eventually(() => api(server.baseUrl, '/api/status'), {
      what: 'the authority back in /api/status',
      until: (res) => res.body.components.anchors.ok === true,
      timeoutMs: 20_000,
    });
    assert.equal(recovered.body.components.anchors.endpoints[0].state, 'ok');
  });
});

describe('anchors with two instances on one database', () => {
  test('each checkpoint is anchored once, by one instance at a time', async () => {
    const tsa = await startOpensslTsa();
    const dataDir = makeDataDir();
    const env = { ANCHOR_TSA_URLS: tsa.url, ANCHOR_INTERVAL_MS: '50', ANCHOR_ALLOW_PRIVATE_URLS: 'true' };
    const a = await startServer({ dataDir, env });
    const b = await startServer({ dataDir, env });
    try {
      const ids: string[] = [];
      for (let n = 0; n < 20; n++) {
        const target = n % 2 === 0 ? a : b;
        const res = await api(target.baseUrl, '/api/proof/notarize', {
          method: 'POST',
          body: notarizeBody({ contentHash: sampleHash(1000 + n) }),
        });
        assert.equal(res.status, 200);
        ids.push(res.body.proof.id);
      }
      for (const id of ids) {
        await eventually(() => api(b.baseUrl, `/api/proofs/${id}/anchors`), {
          what: `the anchor of ${id}`,
          until: (res) => res.status === 200,
        });
      }
      // Anchoring goes on while the test reads (a later checkpoint may be under way): every time-stamp
      // the authority gave must end up as one stored anchor.
      const { list, imprints } = await eventually(
        async () => {
          const imprints = [...tsa.imprints.items];
          const anchors = (await api(a.baseUrl, '/api/log/anchors?limit=100')).body.anchors;
          return { list: anchors as { treeSize: number }[], imprints };
        },
        {
          what: 'every time-stamp the authority gave stored as an anchor',
          until: ({ list, imprints }) => imprints.length === list.length,
        },
      );
      const sizes = list.map((x) => x.treeSize);
      assert.equal(new Set(sizes).size, sizes.length);
      const anchorLines = () => [...a.logs, ...b.logs].filter((line) => line.includes('anchors')).join('\n');
      assert.equal(
        new Set(imprints).size,
        imprints.length,
        `a checkpoint time-stamped twice:\n${anchorLines()}`,
      );
      // The instance that stops gives up the lease; the other anchors from then on.
      await a.close();
      const res = await api(b.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({ contentHash: sampleHash(2000) }),
      });
      await eventually(() => api(b.baseUrl, `/api/proofs/${res.body.proof.id}/anchors`), {
        what: 'an anchor by the instance left',
        until: (r) => r.status === 200,
      });
    } finally {
      await a.close();
      await b.close();
      a.cleanup();
      await tsa.close();
    }
  });
});
