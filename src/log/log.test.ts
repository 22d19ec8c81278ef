import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { leafHash, verifyConsistency, verifyInclusion } from '../core/merkle.ts';
import {
  consistencyPath,
  getterOf,
  inclusionPath,
  newNodes,
  nodeKey,
  parseTileIndexPath,
  tileIndexPath,
  treeRoot,
} from '../core/merkle-tree.ts';
import { nodeHash } from '../core/merkle.ts';
import { openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import {
  api,
  expectError,
  loggedProof,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';
import { parseTilePath } from './log-routes.ts';

/** Builds the stored-node map of a tree the way the sequencer does: append batches, store new nodes. */
function grow(batches: number[][]): { nodes: Map<string, Uint8Array>; leaves: Buffer[] } {
  const nodes = new Map<string, Uint8Array>();
  const leaves: Buffer[] = [];
  for (const batch of batches) {
    const oldSize = leaves.length;
    for (const value of batch) {
      const leaf = leafHash(Buffer.from(`entry ${leaves.length} ${value}`));
      nodes.set(nodeKey(0, leaves.length), leaf);
      leaves.push(leaf);
    }
    for (const { level, index } of newNodes(oldSize, leaves.length)) {
      if (level === 0) continue;
      const get = getterOf(nodes);
      nodes.set(nodeKey(level, index), nodeHash(get(level - 1, 2 * index), get(level - 1, 2 * index + 1)));
    }
  }
  return { nodes, leaves };
}

function flip(hash: Uint8Array, bit: number): Buffer {
  const copy = Buffer.from(hash);
  copy[Math.floor(bit / 8) % copy.length]! ^= 1 << (bit % 8);
  return copy;
}

describe('Merkle tree math over stored subtrees', () => {
  test('for random append sequences, every inclusion and consistency proof verifies; one flipped bit fails', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.nat(), { minLength: 1, maxLength: 9 }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        (batches, bit) => {
          const { nodes, leaves } = grow(batches);
          const get = getterOf(nodes);
          const n = leaves.length;
          for (let size = 1; size <= n; size++) {
            const root = treeRoot(size, get);
            for (let i = 0; i < size; i++) {
              const proof = inclusionPath(i, size, get);
              assert.ok(verifyInclusion(i, size, leaves[i]!, proof, root));
              assert.ok(!verifyInclusion(i, size, flip(leaves[i]!, bit), proof, root));
              if (proof.length > 0) {
                const tampered = proof.map((h, j) => (j === bit % proof.length ? flip(h, bit) : h));
                assert.ok(!verifyInclusion(i, size, leaves[i]!, tampered, root));
              }
            }
            for (let from = 1; from <= size; from++) {
              const proof = consistencyPath(from, size, get);
              const oldRoot = treeRoot(from, get);
              assert.ok(verifyConsistency(from, size, oldRoot, root, proof));
              assert.ok(!verifyConsistency(from, size, flip(oldRoot, bit), root, proof));
              if (proof.length > 0) {
                const tampered = proof.map((h, j) => (j === bit % proof.length ? flip(h, bit) : h));
                assert.ok(!verifyConsistency(from, size, oldRoot, root, tampered));
              }
            }
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  test('tile paths follow C2SP tlog-tiles and parse back only in canonical form', () => {
    assert.equal(tileIndexPath(0), '000');
    assert.equal(tileIndexPath(67), '067');
    assert.equal(tileIndexPath(1234067), 'x001/x234/067');
    for (const n of [0, 5, 999, 1000, 1234067, 987654321]) {
      assert.equal(parseTileIndexPath(tileIndexPath(n).split('/')), n);
    }
    for (const bad of ['67', 'x067', '000/067', 'x000/067', '1234', 'x01/234']) {
      assert.equal(parseTileIndexPath(bad.split('/')), undefined, bad);
    }
    assert.deepEqual(parseTilePath('0/x001/234.p/5'), { level: 0, index: 1234, width: 5 });
    assert.deepEqual(parseTilePath('entries/000'), { level: 'entries', index: 0, width: undefined });
    for (const bad of ['0/000.p/256', '0/000.p/0', '7/000', 'x/000', '0/000.p/05', 'entries']) {
      assert.equal(parseTilePath(bad), undefined, bad);
    }
  });
});

describe('the log over HTTP', () => {
  let server: TestServer;
  const ids: string[] = [];
  let vkey: string;

  async function integrated(size: number): Promise<string> {
    const res = await eventually(() => api(server.baseUrl, '/log/checkpoint'), {
      what: `the log reaches ${size} entries`,
      until: (checkpoint) =>
        checkpoint.status === 200 &&
        parseCheckpoint(checkpoint.text.slice(0, checkpoint.text.indexOf('\n\n') + 1)).size >= size,
      timeoutMs: 15_000,
    });
    return res.text;
  }

  before(async () => {
    server = await startServer();
    vkey = server.ctx.log.verifierKey;
    for (let i = 0; i < 300; i++) {
      const res = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({
          contentHash: sampleHash(500 + i),
          idempotencyKey: `log-${i}`,
          label: `log entry ${i}`,
        }),
      });
      assert.equal(res.status, 200);
      ids.push(res.body.proof.id as string);
    }
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

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
    const subtree = (() => {
      const nodes = new Map(leaves.map((leaf, i) => [nodeKey(0, i), leaf as Uint8Array]));
      for (const { level, index } of newNodes(0, 256)) {
        if (level > 0) {
          const g = getterOf(nodes);
          nodes.set(nodeKey(level, index), nodeHash(g(level - 1, 2 * index), g(level - 1, 2 * index + 1)));
        }
      }
      return getterOf(nodes)(8, 0);
    })();
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
      assert.equal(report.body.verified, true, 'not yet logged is not a failure');
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

test('an instance that remembers an older checkpoint still answers for proofs another instance logged', async (t) => {
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
