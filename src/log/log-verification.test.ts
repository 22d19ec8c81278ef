import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import { api, expectError, loggedProof, notarizeBody, sampleHash, startServer } from '../../test/helper.ts';
import { flip, ids, integrated, server, vkey, withServedLog } from './log-test-setup.ts';

describe('the log over HTTP', () => {
  withServedLog();

  test('an independent verifier (@sigstore/verify) accepts an exported proof and rejects tampered ones', async () => {
    const note = await integrated(300);
    const { verifyTLogInclusion } = (await import('@sigstore/verify/dist/tlog/index.js')) as unknown as {
      verifyTLogInclusion: (entry: unknown, tlogs: unknown[]) => void;
    };
    const id = ids[77]!;
    const leaf = Buffer.from(
      (await api(server.baseUrl, `/api/verify/proofs/${id}`)).body.signingMessage,
      'utf8',
    );
    const res = await api(server.baseUrl, `/api/proofs/${id}/tlog-proof`);
    const lines = res.text.split('\n');
    const blank = lines.indexOf('', 2);
    const checkpoint = parseCheckpoint(openNote(note, parseVerifierKey(vkey)));
    const verifier = parseVerifierKey(vkey);
    // Sigstore's verifier is configured with the log (its key, and its key hint as the log id prefix).
    const logID = Buffer.concat([verifier.keyId, Buffer.alloc(28)]);
    const tlogs = [
      {
        logID,
        publicKey: verifier.publicKey,
        baseURL: `https://${checkpoint.origin}`,
        validFor: { start: new Date(0), end: new Date(8.64e15) },
      },
    ];
    const entry = (overrides: { body?: Buffer; hashes?: Buffer[]; envelope?: string } = {}) => ({
      logId: { keyId: logID },
      canonicalizedBody: overrides.body ?? leaf,
      inclusionProof: {
        logIndex: lines[1]!.slice('index '.length),
        treeSize: String(checkpoint.size),
        rootHash: checkpoint.rootHash,
        hashes: overrides.hashes ?? lines.slice(2, blank).map((h) => Buffer.from(h, 'base64')),
        checkpoint: { envelope: overrides.envelope ?? lines.slice(blank + 1).join('\n') },
      },
    });
    verifyTLogInclusion(entry(), tlogs);
    const otherHash = Buffer.from(
      leaf.toString('utf8').replace(/"contentHash":"sha256:./, '"contentHash":"sha256:f'),
    );
    assert.throws(() => verifyTLogInclusion(entry({ body: otherHash }), tlogs), 'another hash');
    const hashes = entry().inclusionProof.hashes;
    assert.throws(() =>
      verifyTLogInclusion(entry({ hashes: [flip(hashes[0]!, 3), ...hashes.slice(1)] }), tlogs),
    );
    const forged = entry().inclusionProof.checkpoint.envelope.replace(
      /\n(\d+)\n/,
      (_m, n: string) => `\n${Number(n) - 1}\n`,
    );
    assert.throws(() => verifyTLogInclusion(entry({ envelope: forged }), tlogs), 'a forged checkpoint');
  });

  test('the tree recomputed from the stored leaves alone equals the signed head', async () => {
    const note = await integrated(300);
    const checkpoint = parseCheckpoint(openNote(note, parseVerifierKey(vkey)));
    assert.deepEqual(await server.ctx.log.recomputeRoot(checkpoint.size), checkpoint.rootHash);
  });

  test('the verify report checks inclusion; a tampered log node makes it invalid', async () => {
    await integrated(300);
    const id = ids[6]!;
    const good = await api(server.baseUrl, `/api/verify/proofs/${id}`);
    assert.equal(good.body.checks.inclusion.status, 'valid', good.body.checks.inclusion.message);
    assert.equal(good.body.verified, true);
    const leafIndex = good.body.checks.inclusion.leafIndex as number;
    const { db } = server.ctx.database;
    const sibling = leafIndex ^ 1;
    const original = await db
      .selectFrom('log_nodes')
      .select('hash')
      .where('level', '=', 0)
      .where('idx', '=', sibling)
      .executeTakeFirstOrThrow();
    await db
      .updateTable('log_nodes')
      .set({ hash: Buffer.alloc(32, 7).toString('base64') })
      .where('level', '=', 0)
      .where('idx', '=', sibling)
      .execute();
    try {
      const bad = await api(server.baseUrl, `/api/verify/proofs/${id}`);
      assert.equal(bad.body.checks.inclusion.status, 'invalid');
      assert.equal(bad.body.verified, false);
    } finally {
      await db
        .updateTable('log_nodes')
        .set({ hash: original.hash })
        .where('level', '=', 0)
        .where('idx', '=', sibling)
        .execute();
    }
  });

  test('before integration the inclusion proof answers 409 not_yet_integrated', async () => {
    await server.ctx.sequencer.stop();
    let id = '';
    try {
      const res = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({ contentHash: sampleHash(9999), idempotencyKey: 'log-late' }),
      });
      id = res.body.proof.id as string;
      assert.equal(res.body.proof.log, null);
      assert.equal((await api(server.baseUrl, `/api/proofs/${id}`)).body.proof.log, null);
      const report = await api(server.baseUrl, `/api/verify/proofs/${res.body.proof.id}`);
      assert.equal(report.body.checks.inclusion.status, 'unavailable');
      assert.equal(report.body.verified, true, 'not yet integrated is not a failure');
      const early = await api(server.baseUrl, `/api/proofs/${res.body.proof.id}/inclusion`);
      expectError(early, 409, 'not_yet_integrated');
      assert.equal(early.headers.get('retry-after'), '1');
      expectError(
        await api(server.baseUrl, `/api/proofs/${res.body.proof.id}/tlog-proof`),
        409,
        'not_yet_integrated',
      );
    } finally {
      server.ctx.sequencer.start();
    }
    // Read before integration, the document still gains its log position once integrated.
    const { log } = await loggedProof(server.baseUrl, id);
    assert.equal(typeof log.leafIndex, 'number');
  });
});

test('an instance that remembers an older checkpoint still answers for proofs another instance integrated', async (t) => {
  // Two instances on one database; only the first sequences.
  const first = await startServer();
  const second = await startServer({ dataDir: first.dataDir });
  t.after(async () => {
    await second.close();
    await first.close();
  });
  await second.ctx.sequencer.stop();
  const made = await api(first.baseUrl, '/api/proof/notarize', {
    method: 'POST',
    body: notarizeBody({ contentHash: sampleHash(1), idempotencyKey: 'two-instances-1' }),
  });
  await loggedProof(first.baseUrl, made.body.proof.id as string);
  const remembered = Number((await (await fetch(`${second.baseUrl}/log/checkpoint`)).text()).split('\n')[1]);

  const later = await api(first.baseUrl, '/api/proof/notarize', {
    method: 'POST',
    body: notarizeBody({ contentHash: sampleHash(2), idempotencyKey: 'two-instances-2' }),
  });
  const leafIndex = (await loggedProof(first.baseUrl, later.body.proof.id as string)).log.leafIndex as number;
  assert.ok(leafIndex >= remembered, 'the second instance has not seen this leaf yet');
  const inclusion = await api(second.baseUrl, `/api/proofs/${later.body.proof.id as string}/inclusion`);
  assert.equal(inclusion.status, 200);
  assert.ok(inclusion.body.treeSize > leafIndex);
  const consistency = await api(
    second.baseUrl,
    `/api/log/consistency?from=${remembered}&to=${leafIndex + 1}`,
  );
  assert.equal(consistency.status, 200);
});
