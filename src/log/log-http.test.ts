import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { leafHash, verifyConsistency, verifyInclusion } from '../core/merkle.ts';
import { getterOf, nodeKey } from '../core/merkle-tree.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import { api, expectError } from '../../test/helper.ts';
import { rootHash } from '../../test/merkle-reference.ts';
import { ids, integrated, server, vkey, withServedLog } from './log-test-setup.ts';

describe('the log over HTTP', () => {
  withServedLog();

  test('the checkpoint is a signed note that verifies with the published key', async () => {
    const note = await integrated(300);
    const text = openNote(note, parseVerifierKey(vkey));
    const checkpoint = parseCheckpoint(text);
    assert.equal(checkpoint.origin, `${new URL(server.baseUrl).host}/log`);
    assert.ok(checkpoint.size >= 300);
    const keys = (await api(server.baseUrl, '/.well-known/hashproof-keys.json')).body.keys as any[];
    const logKey = keys.find((key) => key.use === 'log');
    assert.equal(logKey.verifierKey, vkey);
    const forged = note.replace(/\n(\d+)\n/, (_m, n: string) => `\n${Number(n) + 1}\n`);
    assert.throws(() => openNote(forged, parseVerifierKey(vkey)));
  });

  test('every proof gets one leaf index; inclusion proofs verify against the signed root', async () => {
    const note = await integrated(300);
    const checkpoint = parseCheckpoint(openNote(note, parseVerifierKey(vkey)));
    const seen = new Set<number>();
    for (const id of [ids[0]!, ids[1]!, ids[150]!, ids[255]!, ids[256]!, ids[299]!]) {
      const proof = (await api(server.baseUrl, `/api/proofs/${id}`)).body.proof;
      assert.equal(proof.log.origin, checkpoint.origin);
      assert.ok(!seen.has(proof.log.leafIndex));
      seen.add(proof.log.leafIndex);
      const res = await api(server.baseUrl, `/api/proofs/${id}/inclusion`);
      assert.equal(res.status, 200);
      assert.equal(res.body.treeSize, checkpoint.size);
      assert.equal(res.body.rootHash, checkpoint.rootHash.toString('base64'));
      assert.equal(res.body.checkpoint, note);
      const leaf = leafHash(
        Buffer.from((await api(server.baseUrl, `/api/verify/proofs/${id}`)).body.signingMessage),
      );
      const hashes = (res.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
      assert.ok(verifyInclusion(proof.log.leafIndex, checkpoint.size, leaf, hashes, checkpoint.rootHash));
    }
  });

  test('inclusion at an older size, and consistency between sizes, verify', async () => {
    await integrated(300);
    const { body: proof } = await api(server.baseUrl, `/api/proofs/${ids[3]}`);
    const at10 = await api(server.baseUrl, `/api/proofs/${ids[3]}/inclusion?treeSize=10`);
    assert.equal(at10.status, 200);
    const leaf = leafHash(
      Buffer.from((await api(server.baseUrl, `/api/verify/proofs/${ids[3]}`)).body.signingMessage),
    );
    const hashes = (at10.body.hashes as string[]).map((h) => Buffer.from(h, 'base64'));
    assert.ok(
      verifyInclusion(proof.proof.log.leafIndex, 10, leaf, hashes, Buffer.from(at10.body.rootHash, 'base64')),
    );
    const latest = await api(server.baseUrl, `/api/proofs/${ids[3]}/inclusion`);
    const consistency = await api(server.baseUrl, `/api/log/consistency?from=10&to=${latest.body.treeSize}`);
    assert.equal(consistency.status, 200);
    assert.ok(
      verifyConsistency(
        10,
        latest.body.treeSize,
        Buffer.from(at10.body.rootHash, 'base64'),
        Buffer.from(latest.body.rootHash, 'base64'),
        (consistency.body.hashes as string[]).map((h) => Buffer.from(h, 'base64')),
      ),
    );
    expectError(await api(server.baseUrl, `/api/log/consistency?from=5&to=999999`), 400, 'invalid_request');
    expectError(await api(server.baseUrl, `/api/log/consistency?from=0&to=3`), 400, 'invalid_request');
    expectError(
      await api(server.baseUrl, `/api/proofs/${ids[3]}/inclusion?treeSize=2`),
      400,
      'invalid_request',
    );
    expectError(
      await api(server.baseUrl, `/api/proofs/proof_01ARZ3NDEKTSV4RRFFQ69G5FAV/inclusion`),
      404,
      'not_found',
    );
  });

  test('tiles and entry bundles: full tiles immutable, partial tiles the prefix, entries rebuild the leaves', async () => {
    const note = await integrated(300);
    const checkpoint = parseCheckpoint(openNote(note, parseVerifierKey(vkey)));
    const full = await fetch(`${server.baseUrl}/log/tile/0/000`);
    assert.equal(full.status, 200);
    assert.equal(full.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(full.headers.get('content-type'), 'application/octet-stream');
    const level0 = Buffer.from(await full.arrayBuffer());
    assert.equal(level0.length, 256 * 32);
    const bundle = Buffer.from(await (await fetch(`${server.baseUrl}/log/tile/entries/000`)).arrayBuffer());
    let offset = 0;
    for (let i = 0; i < 256; i++) {
      const length = bundle.readUInt16BE(offset);
      const entry = bundle.subarray(offset + 2, offset + 2 + length);
      offset += 2 + length;
      assert.deepEqual(leafHash(entry), level0.subarray(i * 32, i * 32 + 32), `entry ${i}`);
    }
    assert.equal(offset, bundle.length);
    const rest = checkpoint.size - 256;
    const partial = await fetch(`${server.baseUrl}/log/tile/0/001.p/${rest}`);
    assert.equal(partial.status, 200);
    assert.equal(Buffer.from(await partial.arrayBuffer()).length, rest * 32);
    assert.equal((await fetch(`${server.baseUrl}/log/tile/0/001`)).status, 404, 'not full yet');
    assert.equal((await fetch(`${server.baseUrl}/log/tile/1/000`)).status, 404, 'level 1 needs 65536 leaves');
    const level1 = await fetch(`${server.baseUrl}/log/tile/1/000.p/1`);
    assert.equal(level1.status, 200);
    const leaves = Array.from({ length: 256 }, (_, i) => level0.subarray(i * 32, i * 32 + 32));
    const get = getterOf(new Map(leaves.map((leaf, i) => [nodeKey(0, i), leaf])));
    const subtree = rootHash(leaves);
    assert.ok(get(0, 0));
    assert.deepEqual(Buffer.from(await level1.arrayBuffer()), Buffer.from(subtree));
    assert.equal((await fetch(`${server.baseUrl}/log/tile/0/67`)).status, 404);
  });

  test('the tlog-proof file is the C2SP format and verifies offline', async () => {
    const note = await integrated(300);
    const res = await api(server.baseUrl, `/api/proofs/${ids[42]}/tlog-proof`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    const [head, ...restLines] = res.text.split('\n');
    assert.equal(head, 'c2sp.org/tlog-proof@v1');
    const index = Number(/^index (\d+)$/.exec(restLines[0] ?? '')?.[1]);
    const blank = restLines.indexOf('');
    const hashes = restLines.slice(1, blank).map((h) => Buffer.from(h, 'base64'));
    const embedded = restLines.slice(blank + 1).join('\n');
    assert.equal(embedded, note);
    const checkpoint = parseCheckpoint(openNote(embedded, parseVerifierKey(vkey)));
    const leaf = leafHash(
      Buffer.from((await api(server.baseUrl, `/api/verify/proofs/${ids[42]}`)).body.signingMessage),
    );
    assert.ok(verifyInclusion(index, checkpoint.size, leaf, hashes, checkpoint.rootHash));
  });
});
