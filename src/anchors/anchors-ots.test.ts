import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  api,
  loggedProof,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { startHeaderServer, type HeaderServer } from '../../test/bitcoin-headers.ts';
import { startCalendar, type Calendar } from '../../test/ots-calendar.ts';
import { reference } from '../../test/ots-reference.ts';
import { eventually } from '../../test/wait.ts';

/**
 * OpenTimestamps anchors through a loopback calendar, each .ots file the service writes read by the
 * reference Python library: its file digest is the proof's content hash, and its operations reach each
 * calendar's attestation, pending first, then a Bitcoin block header the test knows.
 */
describe('OpenTimestamps anchors', () => {
  let calendars: Calendar[];
  let headers: HeaderServer;
  let server: TestServer;
  let dir: string;
  before(async () => {
    calendars = [await startCalendar(), await startCalendar()];
    headers = await startHeaderServer();
    dir = mkdtempSync(path.join(tmpdir(), 'ots-anchor-'));
    server = await startServer({
      env: {
        ANCHOR_OTS_CALENDARS: calendars.map((c) => c.url).join(','),
        ANCHOR_INTERVAL_MS: '100',
        ANCHOR_ALLOW_PRIVATE_URLS: 'true',
        BITCOIN_HEADERS_URL: headers.url,
      },
    });
  });
  after(async () => {
    await server.close();
    server.cleanup();
    await Promise.all(calendars.map((c) => c.close()));
    await headers.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const notarize = async (n: number) => {
    const res = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(n), label: `ots "quoted" ✓ ${n}` }),
    });
    assert.equal(res.status, 200, res.text);
    return res.body.proof as { id: string; contentHash: string };
  };
  const otsFile = async (id: string, name: string) => {
    const res = await fetch(`${server.baseUrl}/api/proofs/${id}/proof.ots`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.equal(res.headers.get('content-disposition'), `attachment; filename="${id}.ots"`);
    const file = path.join(dir, name);
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    return file;
  };

  test('a proof’s .ots file leads from its content hash to each calendar, pending, then to Bitcoin', async () => {
    const proofs: { id: string; contentHash: string }[] = [];
    for (let n = 1; n <= 5; n++) proofs.push(await notarize(n));
    for (const proof of proofs) await loggedProof(server.baseUrl, proof.id);
    const anchors = await eventually(() => api(server.baseUrl, `/api/proofs/${proofs[4]!.id}/anchors`), {
      what: 'the anchor of the last proof',
      until: (res) => res.status === 200,
    });
    assert.deepEqual(
      anchors.body.opentimestamps.map((o: { calendar: string; status: string }) => [o.calendar, o.status]),
      calendars.map((c) => [c.url, 'pending']).sort(),
    );
    const pendingFiles: { path: string; contentHash: string }[] = [];
    for (const [i, proof] of proofs.entries()) {
      await eventually(() => api(server.baseUrl, `/api/proofs/${proof.id}/anchors`), {
        what: `the anchor of ${proof.id}`,
        until: (res) => res.status === 200,
      });
      pendingFiles.push({
        path: await otsFile(proof.id, `pending-${i}.ots`),
        contentHash: proof.contentHash.slice(7),
      });
    }
    const pending = await reference('check', { headers: {}, files: pendingFiles });
    for (const answer of pending) {
      assert.equal(answer.error, undefined);
      assert.equal(answer.hashOp, 'sha256');
      assert.equal(answer.digestMatches, true);
      assert.deepEqual(
        answer.attestations.map((a: { kind: string; uri: string }) => [a.kind, a.uri]).sort(),
        calendars.map((c) => ['pending', c.url]).sort(),
      );
    }

    // The first calendar's commitments reach Bitcoin; the service upgrades its copy.
    const block = calendars[0]!.confirm();
    headers.add(block.height, block.header);
    const confirmed = await eventually(() => api(server.baseUrl, `/api/proofs/${proofs[0]!.id}/anchors`), {
      what: 'the Bitcoin attestation in the anchors',
      until: (res) => res.body.opentimestamps?.some((o: { status: string }) => o.status === 'bitcoin'),
      timeoutMs: 20_000,
    });
    const bitcoin = confirmed.body.opentimestamps.find((o: { status: string }) => o.status === 'bitcoin');
    assert.deepEqual(bitcoin, {
      calendar: calendars[0]!.url,
      status: 'bitcoin',
      bitcoinHeight: block.height,
    });
    const page = (await api(server.baseUrl, `/proof/${proofs[0]!.id}`)).text;
    assert.ok(page.includes(`in Bitcoin block ${block.height}</strong>`));
    assert.ok(page.includes('(its block header checked)'));
    assert.ok(page.includes(`/api/proofs/${proofs[0]!.id}/proof.ots`));

    const file = await otsFile(proofs[0]!.id, 'confirmed.ots');
    const [answer] = await reference('check', {
      headers: { [block.height]: block.header.toString('hex') },
      files: [{ path: file, contentHash: proofs[0]!.contentHash.slice(7) }],
    });
    assert.equal(answer.digestMatches, true);
    const kinds = answer.attestations.map((a: { kind: string }) => a.kind).sort();
    assert.deepEqual(kinds, ['bitcoin', 'pending']);
    const verified = answer.attestations.find((a: { kind: string }) => a.kind === 'bitcoin');
    assert.equal(verified.verified, true, verified.error);
    assert.equal(verified.height, block.height);
    assert.equal(
      answer.attestations.find((a: { kind: string }) => a.kind === 'pending').uri,
      calendars[1]!.url,
    );
  });
});
