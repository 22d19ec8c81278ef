import { BoundedMap } from '../core/bounded-map.ts';
import { closeSync, fstatSync, fsync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import {
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
} from 'kysely';

type SqlValue = null | number | bigint | string | Uint8Array;

/** Flushes a file descriptor to disk; `fs.fsync` unless a test watches the calls. */
export type Fsync = (fd: number) => Promise<void>;

const fsyncAsync: Fsync = (fd) =>
  new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())));

interface NodeSqliteDialectOptions {
  /** The database file (`:memory:` has nothing to sync). */
  file: string;
  /** Prepared statements kept, by SQL text (the queries are few and fixed). */
  cacheSize?: number;
  fsync?: Fsync;
}

/**
 * Kysely over Node's built-in node:sqlite, so nothing native has to compile.
 *
 * Durability without blocking: SQLite runs with `synchronous=NORMAL` (a commit writes its WAL frames but
 * does not wait for the disk), and the driver then flushes the WAL file with `fsync` on libuv's thread
 * pool before the commit is reported done. That is what `synchronous=FULL` does, except that the event
 * loop keeps serving other requests (parsing, signing) while the disk works. Kysely gives SQLite one
 * connection under a mutex, and the flush happens before that connection is released, so no query can
 * read a commit before it is on disk. A write outside a transaction is flushed the same way.
 */
export function createNodeSqliteDialect(database: DatabaseSync, options: NodeSqliteDialectOptions): Dialect {
  const driver = new NodeSqliteDriver(database, options);
  return {
    createDriver: () => driver,
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createAdapter: () => new SqliteAdapter(),
    createIntrospector: (db) => new SqliteIntrospector(db),
  };
}

/**
 * The write-ahead log's file shrinks back to this size when the next write starts it over after a full
 * checkpoint. SQLite otherwise keeps the file at its largest: a burst (a bulk import, the log catching
 * up on many proofs) left 1.2 GB behind after 1,000,000 proofs, while sustained load needs under 30 MB.
 */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * The database holds webhook secrets and the hashes of API keys, so what is created for it is the
 * owner's alone: its directories 0700, a new file 0600 (SQLite gives its -wal and -shm files the mode of
 * the database file). A directory or file that already exists keeps its mode: it is the operator's.
 */
function createPrivately(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Opens the embedded database (created if need be): WAL, each commit flushed by the driver (see above). */
export function openSqliteFile(file: string): DatabaseSync {
  if (file !== ':memory:') createPrivately(file);
  const database = new DatabaseSync(file);
  database.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = NORMAL;
    PRAGMA busy_timeout = 5000;
    PRAGMA foreign_keys = ON;
    PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES};
  `);
  return database;
}

interface Prepared {
  statement: StatementSync;
  reader: boolean;
  /** A plain read: needs no flush even outside a transaction. */
  read: boolean;
}

class NodeSqliteDriver implements Driver {
  readonly #database: DatabaseSync;
  readonly #wal: WalFlusher;
  readonly #connection: DatabaseConnection;

  constructor(database: DatabaseSync, options: NodeSqliteDialectOptions) {
    this.#database = database;
    this.#wal = new WalFlusher(options.file, options.fsync ?? fsyncAsync);
    const cache = new BoundedMap<string, Prepared>(options.cacheSize ?? 200);
    const prepare = (sql: string): Prepared => {
      let prepared = cache.get(sql);
      if (prepared === undefined) {
        const statement = database.prepare(sql);
        prepared = { statement, reader: statement.columns().length > 0, read: /^\s*select\b/i.test(sql) };
        cache.set(sql, prepared);
      }
      return prepared;
    };
    this.#connection = {
      executeQuery: async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
        const { statement, reader, read } = prepare(query.sql);
        const parameters = query.parameters as SqlValue[];
        let result: QueryResult<R>;
        if (reader) {
          result = { rows: statement.all(...parameters) as R[] };
        } else {
          const { changes, lastInsertRowid } = statement.run(...parameters);
          result = { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
        }
        if (!read && !database.isTransaction) await this.#wal.flush();
        return result;
      },
      streamQuery: () => {
        throw new Error('streaming is not supported by this driver');
      },
    };
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.#connection;
  }

  async beginTransaction(): Promise<void> {
    this.#database.exec('begin');
  }

  async commitTransaction(): Promise<void> {
    this.#database.exec('commit');
    await this.#wal.flush();
  }

  async rollbackTransaction(): Promise<void> {
    // Kysely also rolls back when the commit's flush failed, after the commit itself went through.
    if (this.#database.isTransaction) this.#database.exec('rollback');
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    this.#wal.close();
    this.#database.close();
  }
}

/** Flushes the database's write-ahead log to disk (and, once, the directory that lists it). */
class WalFlusher {
  readonly #walPath: string | undefined;
  readonly #fsync: Fsync;
  #fd: number | undefined;
  #directorySynced = false;

  constructor(file: string, fsync: Fsync) {
    this.#walPath = file === ':memory:' || file === '' ? undefined : `${path.resolve(file)}-wal`;
    this.#fsync = fsync;
  }

  async flush(): Promise<void> {
    if (this.#walPath === undefined) return;
    const fd = this.#open(this.#walPath);
    if (fd === undefined) return; // no log file yet: nothing was written
    await this.#fsync(fd);
    if (!this.#directorySynced) {
      // The log file's name must survive a crash as well as its content.
      const directory = openSync(path.dirname(this.#walPath), 'r');
      try {
        await this.#fsync(directory);
      } finally {
        closeSync(directory);
      }
      this.#directorySynced = true;
    }
  }

  /** The open log file; reopened if SQLite ever replaced it (another inode under the same name). */
  #open(walPath: string): number | undefined {
    const current = statSync(walPath, { throwIfNoEntry: false });
    if (current === undefined) return undefined;
    if (this.#fd !== undefined && fstatSync(this.#fd).ino === current.ino) return this.#fd;
    this.close();
    this.#fd = openSync(walPath, 'r');
    this.#directorySynced = false;
    return this.#fd;
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}
