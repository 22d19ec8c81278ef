import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import pino from 'pino';
import { vectorsDir } from '../../test/vectors.ts';
import {
  consistencyPath,
  getterOf,
  inclusionPath,
  newNodes,
  nodeKey,
  rangeHash,
  treeRoot,
} from '../core/merkle-tree.ts';
import { CompactRange, rangeNodes } from '../core/compact-range.ts';
import { leafHash, verifyConsistency, verifyInclusion } from '../core/merkle.ts';
import { consistencyProof, inclusionProof, rootHash } from '../../test/merkle-reference.ts';
import { formatCheckpoint, openNote, parseCheckpoint, parseVerifierKey } from '../core/signed-note.ts';
import { parseEntryBundle } from '../core/tlog-tiles.ts';
import { openDatabase, type Db } from '../db/index.ts';
import { proofLeafSource } from '../proofs/log-leaves.ts';
import { LogGuard } from './log-guard.ts';
import { LogService } from './log-service.ts';
import { createLogStore } from './log-store.ts';
import { Sequencer } from './sequencer.ts';

/**
 * The code the service runs for its log (merkle-tree.ts over stored nodes, LogService reading SQLite,
 * formatCheckpoint), checked against a real C2SP log written by Tessera (test/vectors.ts finds it).
 */
const LOG = vectorsDir('tessera-log');
const ORIGIN = 'example.com/log/testdata';
const VKEY = 'example.com/log/testdata+33d7b496+AeHTu4Q3hEIMHNqc6fASMsq3rKNx280NI+oO5xCFkkSx';
const read = (name: string): Buffer => readFileSync(path.join(LOG, name));

const leaves = parseEntryBundle(read('tile/entries/000.p/15')).map(leafHash);
const verifier = parseVerifierKey(VKEY);
/** The signed checkpoint note of every size 0..15, and its authenticated body. */
const notes = Array.from({ length: 16 }, (_, n) => read(`checkpoint.${n}`).toString('utf8'));
const bodies = notes.map((note) => openNote(note, verifier));
const roots = bodies.map((body) => parseCheckpoint(body).rootHash);

/**
 * Grows the stored-node map by one leaf, storing each newly complete subtree as the sequencer does (it
 * continues the tree's right edge, read from the stored nodes: `integrate`).
 */
function growStep(nodes: Map<string, Uint8Array>, size: number): { level: number; index: number }[] {
  const get = getterOf(nodes);
  const edge = rangeNodes(size - 1).map(({ level, index }) => get(level, index));
  const created: { level: number; index: number }[] = [];
  new CompactRange(size - 1, edge).append(leaves[size - 1]!, ({ level, index, hash }) => {
    nodes.set(nodeKey(level, index), hash);
    created.push({ level, index });
  });
  return created;
}

test('merkle-tree.ts over stored nodes: roots equal every checkpoint, proofs equal the reference and verify', () => {
  assert.equal(leaves.length, 15);
  assert.deepEqual(Buffer.from(treeRoot(0, getterOf(new Map()))), roots[0]);
  // Checks at size N see only the nodes stored by then, so a read past the tree would throw.
  const nodes = new Map<string, Uint8Array>();
  for (let size = 1; size <= 15; size++) {
    growStep(nodes, size);
    const get = getterOf(nodes);
    const tree = leaves.slice(0, size);
    assert.deepEqual(Buffer.from(treeRoot(size, get)), roots[size], `root at ${size}`);
    for (let i = 0; i < size; i++) {
      const path = inclusionPath(i, size, get).map((h) => Buffer.from(h));
      assert.deepEqual(path, inclusionProof(i, tree), `inclusion ${i} in ${size}`);
      assert.ok(verifyInclusion(i, size, leaves[i]!, path, roots[size]!), `verify ${i} in ${size}`);
    }
    for (let old = 1; old <= size; old++) {
      const path = consistencyPath(old, size, get).map((h) => Buffer.from(h));
      assert.deepEqual(path, consistencyProof(old, tree), `consistency ${old} → ${size}`);
      assert.ok(verifyConsistency(old, size, roots[old]!, roots[size]!, path), `verify ${old} → ${size}`);
    }
  }
  // A batch append (0 → 15 at once) must store exactly the nodes of fifteen single appends.
  const batch = newNodes(0, 15).map((n) => nodeKey(n.level, n.index));
  assert.deepEqual(batch.sort(), [...nodes.keys()].sort());
  assert.deepEqual(Buffer.from(rangeHash(8, 15, getterOf(nodes))), rootHash(leaves.slice(8, 15)));
});

/** The service's log over a SQLite database: its reads, and the sequencer that writes it. */
async function openLog(db: Db): Promise<{ log: LogService; sequencer: Sequencer }> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const key = { keyId: 'test', privateKey, publicKey, createdAt: new Date(0).toISOString() };
  const store = createLogStore(db, 'sqlite');
  const leaves = proofLeafSource(db, 'sqlite');
  const logger = pino({ level: 'silent' });
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-log-state-'));
  after(() => rmSync(stateDir, { recursive: true, force: true }));
  const guard = new LogGuard({ dir: stateDir, logger });
  const log = new LogService({ store, leaves, key, origin: ORIGIN, logger, guard });
  await log.open();
  await guard.open(log.origin, log.verifierKey);
  const sequencer = new Sequencer({
    store,
    leaves,
    key,
    origin: log.origin,
    clock: { now: () => 1_700_000_000_000 },
    logger,
    guard,
    onSigned: (checkpoint) => log.remember(checkpoint),
  });
  return { log, sequencer };
}

// The vector entries ("one", "two", …) are not proof signing messages, so they cannot be stored as
// proofs: entries() of this store is not compared with Tessera's bundle (see the next test instead), and
// the nodes below are written by this test as the sequencer would, since it only takes
// proofs. tile(), inclusion(), consistency() and recomputeRoot() are the service's real reads.
test('LogService over SQLite holding the vector tree: tiles equal Tessera byte for byte, proofs verify', async () => {
  const handle = await openDatabase({ engine: 'sqlite', path: ':memory:' });
  try {
    const { db } = handle;
    const { log } = await openLog(db);
    const nodes = new Map<string, Uint8Array>();
    for (let size = 1; size <= 15; size++) {
      const values = growStep(nodes, size).map(({ level, index }) => ({
        level,
        idx: index,
        hash: Buffer.from(nodes.get(nodeKey(level, index))!).toString('base64'),
      }));
      await db.insertInto('log_nodes').values(values).execute();
      await db
        .insertInto('log_checkpoints')
        .values({
          tree_size: size,
          root_hash: roots[size]!.toString('base64'),
          checkpoint: notes[size]!,
          created_at: 0,
        })
        .execute();

      assert.deepEqual(await log.tile(0, 0, size), read(`tile/0/000.p/${size}`), `tile of width ${size}`);
      assert.equal(await log.tile(0, 0, size + 1), undefined, `no tile wider than ${size}`);
      assert.deepEqual(await log.recomputeRoot(size), roots[size], `recomputed root at ${size}`);
      for (let i = 0; i < size; i++) {
        const inclusion = await log.inclusion(i, size);
        assert.deepEqual(inclusion.rootHash, roots[size]);
        assert.equal(inclusion.checkpoint, notes[size]);
        assert.deepEqual(
          inclusion.hashes.map((h) => Buffer.from(h)),
          inclusionProof(i, leaves.slice(0, size)),
        );
        assert.ok(verifyInclusion(i, size, leaves[i]!, inclusion.hashes, roots[size]!), `${i} in ${size}`);
      }
      for (let old = 1; old <= size; old++) {
        const proof = await log.consistency(old, size);
        assert.ok(verifyConsistency(old, size, roots[old]!, roots[size]!, proof), `${old} → ${size}`);
      }
    }
    // 15 leaves make no level-1 tile (it needs 256 leaves): Tessera has none either.
    assert.equal(await log.tile(1, 0, 1), undefined);
  } finally {
    await handle.close();
  }
});

// What entries() writes cannot equal Tessera's bytes (different leaves), so instead: real proofs are
// integrated by the real sequencer, and the bundle it serves must parse with the reader that parses
// Tessera's bundle and agree with its own tile and signed root.
test('LogService entry bundles of integrated proofs parse as C2SP bundles and match its tile and root', async () => {
  const handle = await openDatabase({ engine: 'sqlite', path: ':memory:' });
  try {
    const { db } = handle;
    const { log, sequencer } = await openLog(db);
    // Multi-byte labels: the uint16 length must count UTF-8 bytes, not characters.
    const labels = Array.from({ length: 15 }, (_, i) => `entrée ${i} ${'€'.repeat(i * 7)}`);
    for (let i = 0; i < 15; i++) {
      const id = `p${String(i).padStart(2, '0')}`;
      await db
        .insertInto('proofs')
        .values({
          id,
          created_at: 1_700_000_000_000 + i,
          content_hash: `sha256:${'ab'.repeat(32)}`,
          label: labels[i]!,
          label_folded: labels[i]!,
          metadata_hash: `sha256:${'cd'.repeat(32)}`,
          metadata_keys: '[]',
          signature: 'sig',
          key_id: 'k',
          idempotency_scope: 'test',
          idempotency_key: id,
          request_fingerprint: id,
          created_via: 'demo',
          tst_format: 'seconds',
        })
        .execute();
      // Two steps of the sequencer (6 then 9 proofs), so the bundle spans batches.
      if (i === 5 || i === 14) assert.equal(await sequencer.integrate(), i === 5 ? 6 : 9);
    }
    const bundle = await log.entries(0, 15);
    assert.ok(bundle !== undefined);
    const entries = parseEntryBundle(bundle);
    assert.deepEqual(
      entries.map((e) => (JSON.parse(e.toString('utf8')) as { label: string }).label),
      labels,
    );
    assert.deepEqual(Buffer.concat(entries.map(leafHash)), await log.tile(0, 0, 15));
    assert.deepEqual((await log.latest())?.rootHash, rootHash(entries.map(leafHash)));
    assert.deepEqual(parseEntryBundle((await log.entries(0, 4))!), entries.slice(0, 4));
    assert.equal(await log.entries(0, 16), undefined);
  } finally {
    await handle.close();
  }
});

test('formatCheckpoint reproduces every Tessera checkpoint body byte for byte', () => {
  const nodes = new Map<string, Uint8Array>();
  for (let size = 0; size <= 15; size++) {
    if (size > 0) growStep(nodes, size);
    const parsed = parseCheckpoint(bodies[size]!);
    assert.equal(formatCheckpoint(parsed), bodies[size], `round trip at ${size}`);
    // The body the service would sign, from its own root computation, is Tessera's body.
    const rootHash = Buffer.from(treeRoot(size, getterOf(nodes)));
    assert.equal(formatCheckpoint({ origin: ORIGIN, size, rootHash, extensions: [] }), bodies[size]);
  }
  assert.equal(read('checkpoint').toString('utf8'), notes[15], 'the latest checkpoint is size 15');
});
