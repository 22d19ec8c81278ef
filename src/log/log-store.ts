import { CompiledQuery, sql } from 'kysely';
import { nodeKey } from '../core/merkle-tree.ts';
import type { Db, DatabaseHandle } from '../db/index.ts';

/** A node of the tree: level `level`, index `index` covers leaves [index·2^level, (index+1)·2^level). */
interface NodeId {
  level: number;
  index: number;
}

export interface SignedCheckpoint {
  treeSize: number;
  rootHash: Buffer;
  /** The C2SP signed note, verbatim. */
  checkpoint: string;
}

/** A step found the head at another size than the one it read: another writer advanced it first. */
export class HeadMoved extends Error {
  constructor() {
    super('the log head moved: another writer advanced it first');
    this.name = 'HeadMoved';
  }
}

/**
 * Every read and write of the log's tables (`log_head`, `log_nodes`, `log_checkpoints`), for one engine
 * chosen when the store is made. Its contract:
 *
 * - The head moves by compare-and-swap: a step reads the head's size (`headSize`, which on PostgreSQL
 *   also locks the row until the step's transaction ends) and `moveHead` moves it from that size or
 *   throws `HeadMoved`, so two writers never both extend the same tree and the log cannot fork.
 * - What a step writes (head, nodes, checkpoint, and the leaf indexes its `LeafSource` records) is in
 *   the one transaction `transaction` runs: durable once it commits, absent if it does not.
 * - Nodes are write-once: a node asked for that is not stored is an error (`nodes` throws), never an
 *   absent value, since every node a computation asks for belongs to a tree the log signed.
 */
export interface LogStore {
  /** Runs `step` in one transaction; everything it writes through `trx` commits together. */
  transaction<T>(step: (trx: Db) => Promise<T>): Promise<T>;
  /** The log's stored name, first storing `origin` when it has none; undefined without a head. */
  claimOrigin(origin: string): Promise<string | undefined>;
  /** The size of the tree the head points to, read in `trx` (and locked on PostgreSQL). */
  headSize(trx: Db): Promise<number>;
  /** Moves the head from `from` to `to` in `trx`; throws `HeadMoved` when it is no longer at `from`. */
  moveHead(trx: Db, from: number, to: number): Promise<void>;
  /** The stored nodes asked for, by `nodeKey`; throws when one of them is not stored. */
  nodes(wanted: readonly NodeId[], trx?: Db): Promise<Map<string, Uint8Array>>;
  /** Stores new nodes in `trx`. */
  addNodes(trx: Db, nodes: readonly (NodeId & { hash: Uint8Array })[]): Promise<void>;
  /** Stores a signed checkpoint in `trx`; with `ifAbsent`, keeps the one already stored for its size. */
  addCheckpoint(
    trx: Db,
    checkpoint: SignedCheckpoint,
    createdAt: number,
    options?: { ifAbsent?: boolean },
  ): Promise<void>;
  /** The checkpoint of the largest tree signed; undefined before the first. */
  latestCheckpoint(): Promise<SignedCheckpoint | undefined>;
  /** The signed note of a tree size, read in `trx` when given; null for a size the log never signed. */
  checkpointAt(size: number, trx?: Db): Promise<string | null>;
  /** The hashes of one level at indexes [first, first + count), in order; fewer when not all exist. */
  level(level: number, first: number, count: number): Promise<Buffer[]>;
}

/** Node indexes stay below 2^40 (a trillion leaves), so a level and an index fit one safe integer. */
const NODE_INDEX_BITS = 40;

/**
 * SQLite statements that take a whole list as one JSON parameter, so each is the same for any number of
 * entries: prepared once, instead of once per list length and kept in the statement cache (a step of a
 * few hundred proofs made statements of 100–200 KB each; docs/decisions.md, "One statement for any
 * batch size").
 */
const SQLITE = {
  insertNodes: CompiledQuery.raw(
    'insert into log_nodes (level, idx, hash) select value ->> 0, value ->> 1, value ->> 2 from json_each(?)',
  ),
  /** Each node as one integer, level · 2^40 + index: half the time of [level, index] pairs, parsed twice. */
  fetchNodes: CompiledQuery.raw(
    `select n.level, n.idx, n.hash from json_each(?) as j join log_nodes as n on n.level = j.value >> ${NODE_INDEX_BITS} and n.idx = j.value & ${2 ** NODE_INDEX_BITS - 1}`,
  ),
};

type NodeRow = { level: number; idx: number; hash: string };

/** The engine's ways to read and write nodes, and to lock the head, picked once. */
interface EngineSql {
  lockHead(trx: Db): Promise<void>;
  fetchNodes(db: Db, wanted: readonly NodeId[]): Promise<NodeRow[]>;
  insertNodes(trx: Db, rows: NodeRow[]): Promise<void>;
}

const sqlite: EngineSql = {
  // One writer at a time: the write transaction itself serializes steps.
  lockHead: async () => {},
  fetchNodes: async (db, wanted) => {
    const parameters = [
      JSON.stringify(wanted.map(({ level, index }) => level * 2 ** NODE_INDEX_BITS + index)),
    ];
    return (await db.executeQuery<NodeRow>({ ...SQLITE.fetchNodes, parameters })).rows;
  },
  insertNodes: async (trx, rows) => {
    const parameters = [JSON.stringify(rows.map((row) => [row.level, row.idx, row.hash]))];
    await trx.executeQuery({ ...SQLITE.insertNodes, parameters });
  },
};

const postgres: EngineSql = {
  lockHead: async (trx) => {
    await sql`select tree_size from log_head where id = 1 for update`.execute(trx);
  },
  fetchNodes: async (db, wanted) => {
    const rows: NodeRow[] = [];
    // One query for a proof's worth of nodes (a few dozen); chunks keep big batches under parameter limits.
    for (let i = 0; i < wanted.length; i += 250) {
      const chunk = wanted.slice(i, i + 250);
      // Written as SQL: the query builder took longer to build this OR than the database to answer it.
      const result = await sql<NodeRow>`select level, idx, hash from log_nodes where ${sql.join(
        chunk.map(({ level, index }) => sql`(level = ${level} and idx = ${index})`),
        sql` or `,
      )}`.execute(db);
      rows.push(...result.rows);
    }
    return rows;
  },
  insertNodes: async (trx, rows) => {
    for (let i = 0; i < rows.length; i += 1000) {
      await trx
        .insertInto('log_nodes')
        .values(rows.slice(i, i + 1000))
        .execute();
    }
  },
};

export function createLogStore(db: Db, engineName: DatabaseHandle['engine']): LogStore {
  const engine = engineName === 'sqlite' ? sqlite : postgres;
  return {
    transaction: (step) => db.transaction().execute(step),

    async claimOrigin(origin) {
      await db
        .updateTable('log_head')
        .set({ origin })
        .where('id', '=', 1)
        .where('origin', 'is', null)
        .execute();
      const head = await db.selectFrom('log_head').select('origin').where('id', '=', 1).executeTakeFirst();
      return head?.origin ?? undefined;
    },

    async headSize(trx) {
      await engine.lockHead(trx);
      const head = await trx
        .selectFrom('log_head')
        .select('tree_size')
        .where('id', '=', 1)
        .executeTakeFirst();
      if (head === undefined) throw new Error('log_head is missing');
      return Number(head.tree_size);
    },

    async moveHead(trx, from, to) {
      const moved = await trx
        .updateTable('log_head')
        .set({ tree_size: to })
        .where('id', '=', 1)
        .where('tree_size', '=', from)
        .executeTakeFirst();
      if (Number(moved.numUpdatedRows) !== 1) throw new HeadMoved();
    },

    async nodes(wanted, trx = db) {
      const found = new Map<string, Uint8Array>();
      if (wanted.length === 0) return found;
      for (const row of await engine.fetchNodes(trx, wanted))
        found.set(nodeKey(Number(row.level), Number(row.idx)), Buffer.from(row.hash, 'base64'));
      for (const { level, index } of wanted) {
        if (!found.has(nodeKey(level, index)))
          throw new Error(`log node ${nodeKey(level, index)} is missing`);
      }
      return found;
    },

    async addNodes(trx, nodes) {
      await engine.insertNodes(
        trx,
        nodes.map(({ level, index, hash }) => ({
          level,
          idx: index,
          hash: Buffer.from(hash).toString('base64'),
        })),
      );
    },

    async addCheckpoint(trx, { treeSize, rootHash, checkpoint }, createdAt, { ifAbsent = false } = {}) {
      const insert = trx.insertInto('log_checkpoints').values({
        tree_size: treeSize,
        root_hash: rootHash.toString('base64'),
        checkpoint,
        created_at: createdAt,
      });
      await (ifAbsent ? insert.onConflict((oc) => oc.column('tree_size').doNothing()) : insert).execute();
    },

    async latestCheckpoint() {
      const row = await db
        .selectFrom('log_checkpoints')
        .select(['tree_size', 'root_hash', 'checkpoint'])
        .orderBy('tree_size', 'desc')
        .limit(1)
        .executeTakeFirst();
      if (row === undefined) return undefined;
      return {
        treeSize: Number(row.tree_size),
        rootHash: Buffer.from(row.root_hash, 'base64'),
        checkpoint: row.checkpoint,
      };
    },

    async checkpointAt(size, trx = db) {
      const row = await trx
        .selectFrom('log_checkpoints')
        .select('checkpoint')
        .where('tree_size', '=', size)
        .executeTakeFirst();
      return row?.checkpoint ?? null;
    },

    async level(level, first, count) {
      const rows = await db
        .selectFrom('log_nodes')
        .select('hash')
        .where('level', '=', level)
        .where('idx', '>=', first)
        .where('idx', '<', first + count)
        .orderBy('idx')
        .execute();
      return rows.map((row) => Buffer.from(row.hash, 'base64'));
    },
  };
}
