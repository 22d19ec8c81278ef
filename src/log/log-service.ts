import { BoundedMap } from '../core/bounded-map.ts';
import { CompiledQuery, sql } from 'kysely';
import type pino from 'pino';
import {
  consistencyPath,
  getterOf,
  inclusionPath,
  newNodes,
  nodeKey,
  nodesNeeded,
  rangeHash,
  treeRoot,
  type NodeGetter,
} from '../core/merkle-tree.ts';
import { leafHash, nodeHash } from '../core/merkle.ts';
import { signingMessage } from '../core/proof-signature.ts';
import {
  formatCheckpoint,
  formatVerifierKey,
  openNote,
  parseCheckpoint,
  parseVerifierKey,
  signNote,
  type Checkpoint,
  type NoteVerifier,
} from '../core/signed-note.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import type { LogKey } from '../keys/keyring.ts';
import type { Clock } from '../platform/clock.ts';

/** Tiles are 2^8 hashes wide (C2SP tlog-tiles). */
export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;
/**
 * At most this many proofs join the tree in one signed step. Catching up on 300,000 proofs takes about
 * 6 s at 512 as at 4,096, but the service peaked at 200 MB instead of 408 MB.
 */
const BATCH = 512;
/**
 * How long a checkpoint read from the store answers for the newest one. Within an instance the
 * sequencer hands over each checkpoint it signs at once; this only bounds how late a checkpoint signed
 * by another instance shows up. A request that needs a larger tree than the one remembered reads the
 * store at once.
 */
const LATEST_TTL_MS = 100;
/** SHA-256: every node of the tree is this long. */
const HASH_BYTES = 32;
/** Inclusion proofs kept, by leaf index and tree size (they never change). */
const INCLUSION_CACHE_SIZE = 10_000;
/** An idle sequencer looks for new proofs this often (a nudge after each commit is faster). */
const IDLE_POLL_MS = 250;
/**
 * After a step that integrated proofs, while more keep arriving, the sequencer waits this long so the
 * next batch gathers them: one transaction and one signed checkpoint per 100 ms of proofs rather than
 * per commit of the writer. Longer steps cost less per proof (20 → 100 ms: 8–10 % more proofs/s under
 * full load, no gain beyond), and a proof still reaches a signed tree in about a tenth of a second.
 */
const GATHER_MS = 100;

export interface LogServiceDeps {
  db: Db;
  engine: 'sqlite' | 'postgres';
  key: LogKey;
  /**
   * The log's name in checkpoints, from the public host and path (e.g. `proofs.example.com/log`). Only
   * the first start of a log uses it: the name is then stored and kept, whatever later configurations say.
   */
  origin: string;
  clock: Clock;
  log: pino.Logger;
}

export interface SignedCheckpoint {
  treeSize: number;
  rootHash: Buffer;
  /** The C2SP signed note, verbatim. */
  checkpoint: string;
}

export interface Inclusion {
  leafIndex: number;
  treeSize: number;
  rootHash: Buffer;
  hashes: Uint8Array[];
  /** The signed checkpoint of that tree size (null for a size the log never signed). */
  checkpoint: string | null;
}

/** An inclusion proof as JSON gives it: hashes in base64 (DECISIONS.md §8). */
export function encodeInclusion(inclusion: Inclusion): {
  leafIndex: number;
  treeSize: number;
  rootHash: string;
  hashes: string[];
  checkpoint: string | null;
} {
  return {
    leafIndex: inclusion.leafIndex,
    treeSize: inclusion.treeSize,
    rootHash: inclusion.rootHash.toString('base64'),
    hashes: inclusion.hashes.map((hash) => Buffer.from(hash).toString('base64')),
    checkpoint: inclusion.checkpoint,
  };
}

/** The leaf of a proof: the UTF-8 bytes of its JCS signing message (DECISIONS.md §8). */
export function proofLeaf(row: {
  id: string;
  created_at: number;
  content_hash: string;
  metadata_hash: string;
  label: string;
}): Buffer {
  return Buffer.from(
    signingMessage({
      id: row.id,
      timestamp: new Date(Number(row.created_at)).toISOString(),
      contentHash: row.content_hash,
      metadataHash: row.metadata_hash,
      label: row.label,
    }),
    'utf8',
  );
}

/** Thrown inside the sequencer's transaction when another writer advanced the head first. */
class HeadMoved extends Error {}

/**
 * The append-only Merkle log of all proofs. A sequencer in every instance integrates new proofs in
 * batches; one writer at a time is enforced by compare-and-swap on `log_head` (and a row lock on
 * PostgreSQL), so the log cannot fork. Every complete subtree hash is stored, so the tree can be
 * recomputed from the leaves and every read is a few indexed lookups.
 */
export class LogService {
  readonly #deps: LogServiceDeps;
  #origin: string;
  #vkey: string;
  #running = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #pendingNudge = false;
  #latest: { checkpoint: SignedCheckpoint; readAt: number } | undefined;
  readonly #inclusions = new BoundedMap<string, { packed: Uint8Array; root: Uint8Array }>(
    INCLUSION_CACHE_SIZE,
  );

  constructor(deps: LogServiceDeps) {
    this.#deps = deps;
    this.#origin = deps.origin;
    this.#vkey = formatVerifierKey(deps.origin, deps.key.publicKey);
  }

  /** Reads the log's stored name, storing the configured one when the log is new. */
  async open(): Promise<void> {
    const { db } = this.#deps;
    await db
      .updateTable('log_head')
      .set({ origin: this.#deps.origin })
      .where('id', '=', 1)
      .where('origin', 'is', null)
      .execute();
    const head = await db.selectFrom('log_head').select('origin').where('id', '=', 1).executeTakeFirst();
    const origin = head?.origin ?? this.#deps.origin;
    if (origin !== this.#deps.origin) {
      this.#deps.log.warn(
        { storedOrigin: origin, configuredOrigin: this.#deps.origin },
        'the log keeps the name it was created with; PUBLIC_BASE_URL names another',
      );
    }
    this.#origin = origin;
    this.#vkey = formatVerifierKey(origin, this.#deps.key.publicKey);
  }

  get origin(): string {
    return this.#origin;
  }

  #verifier: { vkey: string; verifier: NoteVerifier } | undefined;
  #lastOpened: { note: string; checkpoint: Checkpoint } | undefined;

  /**
   * The checkpoint of a signed note if its signature verifies with the log key; undefined otherwise.
   * The newest note verified is remembered (every verify report checks against the same one).
   */
  openCheckpoint(note: string): Checkpoint | undefined {
    if (this.#lastOpened?.note === note) return this.#lastOpened.checkpoint;
    if (this.#verifier?.vkey !== this.#vkey)
      this.#verifier = { vkey: this.#vkey, verifier: parseVerifierKey(this.#vkey) };
    try {
      const checkpoint = parseCheckpoint(openNote(note, this.#verifier.verifier));
      this.#lastOpened = { note, checkpoint };
      return checkpoint;
    } catch {
      return undefined;
    }
  }

  /** The C2SP verifier key of the log (`origin+keyid+base64`). */
  get verifierKey(): string {
    return this.#vkey;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
  }

  /** New proofs were committed: integrate them now rather than at the next poll. */
  nudge(): void {
    this.#pendingNudge = true;
    this.#wake?.();
  }

  async #run(): Promise<void> {
    while (this.#running) {
      let integrated = 0;
      let delay = IDLE_POLL_MS;
      try {
        integrated = await this.sequence();
      } catch (error) {
        if (!(error instanceof HeadMoved)) {
          this.#deps.log.warn({ err: error }, 'log sequencer: step failed, retrying');
          delay = 1_000;
        } else delay = 0;
      }
      if (integrated === BATCH || !this.#running) continue;
      if (this.#pendingNudge) {
        this.#pendingNudge = false;
        if (delay === IDLE_POLL_MS) {
          // Not woken by nudges: they come with every commit while proofs keep arriving.
          if (integrated > 0) await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
          continue;
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /**
   * One sequencing step: up to BATCH unsequenced proofs become leaves, the new subtree hashes are
   * stored, and a checkpoint of the new size is signed, all in one transaction that first moves the
   * head from the size it read (compare-and-swap). Returns how many proofs were integrated.
   */
  async sequence(): Promise<number> {
    const { db, engine } = this.#deps;
    let signed: SignedCheckpoint | undefined;
    const integrated = await db.transaction().execute(async (trx) => {
      if (engine === 'postgres')
        await sql`select tree_size from log_head where id = 1 for update`.execute(trx);
      const head = await trx
        .selectFrom('log_head')
        .select('tree_size')
        .where('id', '=', 1)
        .executeTakeFirst();
      if (head === undefined) throw new Error('log_head is missing');
      const oldSize = Number(head.tree_size);
      const rows = await trx
        .selectFrom('proofs')
        .select(['seq', 'id', 'created_at', 'content_hash', 'metadata_hash', 'label'])
        .where('leaf_index', 'is', null)
        .orderBy('seq')
        .limit(BATCH)
        .execute();
      if (rows.length === 0) {
        if (oldSize === 0) await this.#signEmptyTree(trx);
        return 0;
      }
      const newSize = oldSize + rows.length;
      const moved = await trx
        .updateTable('log_head')
        .set({ tree_size: newSize })
        .where('id', '=', 1)
        .where('tree_size', '=', oldSize)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== 1) throw new HeadMoved();

      // The new complete subtrees, lowest level first; their children are new or already stored.
      const nodes = new Map<string, Uint8Array>();
      rows.forEach((row, i) => nodes.set(nodeKey(0, oldSize + i), leafHash(proofLeaf(row))));
      const created = newNodes(oldSize, newSize);
      const stored = created
        .filter((n) => n.level > 0)
        .flatMap((n) => [
          { level: n.level - 1, index: 2 * n.index },
          { level: n.level - 1, index: 2 * n.index + 1 },
        ])
        .filter((n) => n.index < Math.floor(oldSize / 2 ** n.level));
      for (const [key, hash] of await fetchNodes(trx, engine, stored)) nodes.set(key, hash);
      for (const { level, index } of created) {
        if (level === 0) continue;
        const get = getterOf(nodes);
        nodes.set(nodeKey(level, index), nodeHash(get(level - 1, 2 * index), get(level - 1, 2 * index + 1)));
      }
      const rootNodes = nodesNeeded((get) => treeRoot(newSize, get)).filter(
        (n) => !nodes.has(nodeKey(n.level, n.index)),
      );
      for (const [key, hash] of await fetchNodes(trx, engine, rootNodes)) nodes.set(key, hash);
      const root = Buffer.from(treeRoot(newSize, getterOf(nodes)));

      const values = created.map(({ level, index }) => ({
        level,
        idx: index,
        hash: Buffer.from(getterOf(nodes)(level, index)).toString('base64'),
      }));
      if (engine === 'sqlite') {
        await trx.executeQuery({
          ...SQLITE.insertNodes,
          parameters: [JSON.stringify(values.map((node) => [node.level, node.idx, node.hash]))],
        });
        await trx.executeQuery({
          ...SQLITE.setLeafIndexes,
          parameters: [JSON.stringify(rows.map((row, i) => [row.seq, oldSize + i]))],
        });
      } else {
        for (let i = 0; i < values.length; i += 1000) {
          await trx
            .insertInto('log_nodes')
            .values(values.slice(i, i + 1000))
            .execute();
        }
        for (let i = 0; i < rows.length; i += 500) {
          const chunk = rows.slice(i, i + 500);
          const list = sql.join(chunk.map((row, j) => sql`(${row.id}, cast(${oldSize + i + j} as bigint))`));
          await sql`with v(id, idx) as (values ${list}) update proofs set leaf_index = v.idx from v where proofs.id = v.id`.execute(
            trx,
          );
        }
      }
      const checkpoint = this.#sign(newSize, root);
      await trx
        .insertInto('log_checkpoints')
        .values({
          tree_size: newSize,
          root_hash: root.toString('base64'),
          checkpoint,
          created_at: this.#deps.clock.now(),
        })
        .execute();
      signed = { treeSize: newSize, rootHash: root, checkpoint };
      return rows.length;
    });
    if (signed !== undefined) this.#remember(signed);
    return integrated;
  }

  #remember(checkpoint: SignedCheckpoint): void {
    if (this.#latest === undefined || checkpoint.treeSize >= this.#latest.checkpoint.treeSize) {
      this.#latest = { checkpoint, readAt: performance.now() };
    }
  }

  async #signEmptyTree(trx: Db): Promise<void> {
    const root = Buffer.from(treeRoot(0, () => new Uint8Array()));
    await trx
      .insertInto('log_checkpoints')
      .values({
        tree_size: 0,
        root_hash: root.toString('base64'),
        checkpoint: this.#sign(0, root),
        created_at: this.#deps.clock.now(),
      })
      .onConflict((oc) => oc.column('tree_size').doNothing())
      .execute();
  }

  #sign(size: number, root: Buffer): string {
    const { key } = this.#deps;
    const origin = this.#origin;
    return signNote(
      formatCheckpoint({ origin, size, rootHash: root, extensions: [] }),
      origin,
      key.privateKey,
      key.publicKey,
    );
  }

  /**
   * The newest signed checkpoint, or undefined before the sequencer first ran. One read within the last
   * LATEST_TTL_MS is reused, unless the caller needs a tree of at least `atLeast` entries that it
   * does not cover.
   */
  async latest(atLeast = 0): Promise<SignedCheckpoint | undefined> {
    const known = this.#latest;
    if (
      known !== undefined &&
      known.checkpoint.treeSize >= atLeast &&
      performance.now() - known.readAt < LATEST_TTL_MS
    ) {
      return known.checkpoint;
    }
    const row = await this.#deps.db
      .selectFrom('log_checkpoints')
      .select(['tree_size', 'root_hash', 'checkpoint'])
      .orderBy('tree_size', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    const checkpoint = {
      treeSize: Number(row.tree_size),
      rootHash: Buffer.from(row.root_hash, 'base64'),
      checkpoint: row.checkpoint,
    };
    this.#remember(checkpoint);
    return checkpoint;
  }

  async #checkpointOf(size: number): Promise<string | null> {
    const row = await this.#deps.db
      .selectFrom('log_checkpoints')
      .select('checkpoint')
      .where('tree_size', '=', size)
      .executeTakeFirst();
    return row?.checkpoint ?? null;
  }

  async #treeSize(atLeast: number): Promise<number> {
    return (await this.latest(atLeast))?.treeSize ?? 0;
  }

  /**
   * Inclusion of leaf `leafIndex` in the tree of `treeSize` (the latest checkpoint when absent). Paths
   * never change, so they are kept in memory; `fromStore` reads the stored hashes regardless.
   */
  async inclusion(
    leafIndex: number,
    treeSize?: number,
    { fromStore = false }: { fromStore?: boolean } = {},
  ): Promise<Inclusion> {
    const latest = await this.latest(treeSize ?? leafIndex + 1);
    const current = latest?.treeSize ?? 0;
    const size = treeSize ?? current;
    if (size > current) throw badSize('treeSize', `is larger than the log (${current} entries)`);
    if (leafIndex >= size) throw badSize('treeSize', `must be larger than the leaf index ${leafIndex}`);
    const key = `${leafIndex}/${size}`;
    let path = fromStore ? undefined : this.#inclusions.get(key);
    if (path === undefined) {
      // The latest tree's root is signed in its checkpoint; only an older size needs it recomputed.
      const signedRoot = latest !== undefined && size === current ? latest.rootHash : undefined;
      const compute = (get: NodeGetter) => ({
        hashes: inclusionPath(leafIndex, size, get),
        root: signedRoot ?? treeRoot(size, get),
      });
      const computed = compute(
        getterOf(await fetchNodes(this.#deps.db, this.#deps.engine, nodesNeeded(compute))),
      );
      // Kept as one array of their own: each hash read from the store is a view of an 8 KB pooled
      // buffer, which a kept view would keep alive whole (10,000 paths held 45 MB that way).
      const packed = new Uint8Array(HASH_BYTES * computed.hashes.length);
      computed.hashes.forEach((hash, i) => packed.set(hash, HASH_BYTES * i));
      path = { packed, root: computed.root };
      this.#inclusions.set(key, path);
    }
    const { packed, root } = path;
    const hashes = Array.from({ length: packed.length / HASH_BYTES }, (_, i) =>
      packed.subarray(HASH_BYTES * i, HASH_BYTES * (i + 1)),
    );
    return {
      leafIndex,
      treeSize: size,
      rootHash: Buffer.from(root),
      hashes,
      checkpoint: size === current && latest ? latest.checkpoint : await this.#checkpointOf(size),
    };
  }

  /** The consistency proof between two tree sizes (1 ≤ from ≤ to ≤ the log's size). */
  async consistency(from: number, to: number): Promise<Uint8Array[]> {
    const current = await this.#treeSize(to);
    if (from < 1) throw badSize('from', 'must be at least 1');
    if (to > current) throw badSize('to', `is larger than the log (${current} entries)`);
    if (from > to) throw badSize('from', 'must not be larger than to');
    const compute = (get: NodeGetter) => consistencyPath(from, to, get);
    return compute(getterOf(await fetchNodes(this.#deps.db, this.#deps.engine, nodesNeeded(compute))));
  }

  /** A tile of hashes (level L covers binary level 8L), `width` entries from the start; undefined when not there yet. */
  async tile(level: number, index: number, width: number): Promise<Buffer | undefined> {
    const span = 2 ** (TILE_HEIGHT * level);
    const current = await this.#treeSize((index * TILE_WIDTH + width) * span);
    if ((index * TILE_WIDTH + width) * span > current) return undefined;
    const first = index * TILE_WIDTH;
    const rows = await this.#deps.db
      .selectFrom('log_nodes')
      .select(['idx', 'hash'])
      .where('level', '=', TILE_HEIGHT * level)
      .where('idx', '>=', first)
      .where('idx', '<', first + width)
      .orderBy('idx')
      .execute();
    if (rows.length !== width) throw new Error(`log tile ${level}/${index} is incomplete in the store`);
    return Buffer.concat(rows.map((row) => Buffer.from(row.hash, 'base64')));
  }

  /** An entry bundle: each leaf as a big-endian uint16 length and its bytes. */
  async entries(index: number, width: number): Promise<Buffer | undefined> {
    const current = await this.#treeSize(index * TILE_WIDTH + width);
    if (index * TILE_WIDTH + width > current) return undefined;
    const first = index * TILE_WIDTH;
    const rows = await this.#deps.db
      .selectFrom('proofs')
      .select(['id', 'created_at', 'content_hash', 'metadata_hash', 'label', 'leaf_index'])
      .where('leaf_index', '>=', first)
      .where('leaf_index', '<', first + width)
      .orderBy('leaf_index')
      .execute();
    if (rows.length !== width) throw new Error(`log entries ${index} are incomplete in the store`);
    return Buffer.concat(
      rows.flatMap((row) => {
        const leaf = proofLeaf(row);
        const length = Buffer.alloc(2);
        length.writeUInt16BE(leaf.length);
        return [length, leaf];
      }),
    );
  }

  /** The C2SP tlog-proof file of a leaf against the latest checkpoint. */
  async tlogProof(leafIndex: number): Promise<string> {
    const inclusion = await this.inclusion(leafIndex);
    if (inclusion.checkpoint === null) throw new Error('the latest tree size has no checkpoint');
    return [
      'c2sp.org/tlog-proof@v1',
      `index ${leafIndex}`,
      ...inclusion.hashes.map((hash) => Buffer.from(hash).toString('base64')),
      '',
      inclusion.checkpoint,
    ].join('\n');
  }

  /** Recomputes the root of `size` from the stored leaf hashes alone (level 0), for audits and tests. */
  async recomputeRoot(size: number): Promise<Buffer> {
    const rows = await this.#deps.db
      .selectFrom('log_nodes')
      .select(['idx', 'hash'])
      .where('level', '=', 0)
      .where('idx', '<', size)
      .orderBy('idx')
      .execute();
    if (rows.length !== size) throw new Error('leaf hashes are missing');
    const leaves = new Map(rows.map((row) => [nodeKey(0, Number(row.idx)), Buffer.from(row.hash, 'base64')]));
    // Rebuild every level from the leaves, ignoring the stored interior nodes.
    const all = new Map<string, Uint8Array>(leaves);
    for (const { level, index } of newNodes(0, size)) {
      if (level > 0) {
        const get = getterOf(all);
        all.set(nodeKey(level, index), nodeHash(get(level - 1, 2 * index), get(level - 1, 2 * index + 1)));
      }
    }
    return Buffer.from(size === 0 ? treeRoot(0, getterOf(all)) : rangeHash(0, size, getterOf(all)));
  }
}

/** Node indexes stay below 2^40 (a trillion leaves), so a level and an index fit one safe integer. */
const NODE_INDEX_BITS = 40;

/**
 * SQLite statements that take a whole list as one JSON parameter, so each is the same for any number of
 * entries: prepared once, instead of once per list length and kept in the statement cache (a step of a
 * few hundred proofs made statements of 100–200 KB each).
 */
const SQLITE = {
  insertNodes: CompiledQuery.raw(
    'insert into log_nodes (level, idx, hash) select value ->> 0, value ->> 1, value ->> 2 from json_each(?)',
  ),
  setLeafIndexes: CompiledQuery.raw(
    'update proofs set leaf_index = j.value ->> 1 from json_each(?) as j where proofs.seq = j.value ->> 0',
  ),
  /** Each node as one integer, level · 2^40 + index: half the time of [level, index] pairs, parsed twice. */
  fetchNodes: CompiledQuery.raw(
    `select n.level, n.idx, n.hash from json_each(?) as j join log_nodes as n on n.level = j.value >> ${NODE_INDEX_BITS} and n.idx = j.value & ${2 ** NODE_INDEX_BITS - 1}`,
  ),
};

async function fetchNodes(
  db: Db,
  engine: 'sqlite' | 'postgres',
  wanted: { level: number; index: number }[],
): Promise<Map<string, Uint8Array>> {
  const found = new Map<string, Uint8Array>();
  const keep = (rows: { level: number; idx: number; hash: string }[]) => {
    for (const row of rows)
      found.set(nodeKey(Number(row.level), Number(row.idx)), Buffer.from(row.hash, 'base64'));
  };
  if (wanted.length === 0) return found;
  if (engine === 'sqlite') {
    const parameters = [
      JSON.stringify(wanted.map(({ level, index }) => level * 2 ** NODE_INDEX_BITS + index)),
    ];
    keep(
      (
        await db.executeQuery<{ level: number; idx: number; hash: string }>({
          ...SQLITE.fetchNodes,
          parameters,
        })
      ).rows,
    );
    return found;
  }
  // One query for a proof's worth of nodes (a few dozen); chunks keep big batches under parameter limits.
  for (let i = 0; i < wanted.length; i += 250) {
    const chunk = wanted.slice(i, i + 250);
    // Written as SQL: the query builder took longer to build this OR than the database to answer it.
    const { rows } = await sql<{
      level: number;
      idx: number;
      hash: string;
    }>`select level, idx, hash from log_nodes where ${sql.join(
      chunk.map(({ level, index }) => sql`(level = ${level} and idx = ${index})`),
      sql` or `,
    )}`.execute(db);
    keep(rows);
  }
  return found;
}

function badSize(parameter: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid request: ${parameter} ${message}`, {
    errors: [{ location: 'querystring', path: `/${parameter}`, message, keyword: 'treeSize' }],
  });
}
