import { Kysely, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import { Migrator } from 'kysely/migration';
import type { DatabaseConfig } from '../config.ts';
import type { DatabaseSync } from 'node:sqlite';
import { createNodeSqliteDialect, openSqliteFile } from './node-sqlite-dialect.ts';
import { startCheckpointer } from './sqlite-checkpointer.ts';
import { migrationProvider } from './migrations/provider.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  engine: DatabaseConfig['engine'];
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  /** PostgreSQL: the connection pool's clients, in use or idle, and the queries waiting for one. */
  pool?: () => { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/**
 * Opens the configured database and brings its schema up to date. `warn` hears trouble the service can
 * live with (an embedded database's checkpoint thread that failed).
 */
export async function openDatabase(
  config: DatabaseConfig,
  warn: (message: string) => void = () => {},
): Promise<DatabaseHandle> {
  let db: Db;
  let sqlite: DatabaseSync | undefined;
  let pool: pg.Pool | undefined;
  if (config.engine === 'postgres') {
    // Loaded only for PostgreSQL: the embedded setup starts without it.
    const { default: pgModule } = await import('pg');
    pool = createPool(pgModule, config.url);
    db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  } else {
    sqlite = openSqliteFile(config.path);
    db = new Kysely<Database>({ dialect: createNodeSqliteDialect(sqlite, { file: config.path }) });
  }
  try {
    await migrate(db, config.engine);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const checkpointer =
    sqlite !== undefined && config.engine === 'sqlite' && config.path !== ':memory:'
      ? checkpointElsewhere(sqlite, config.path, warn)
      : undefined;
  return {
    db,
    engine: config.engine,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    ...(pool === undefined
      ? {}
      : {
          pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
        }),
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/** Moves checkpoints off the request thread; should that thread stop, SQLite checkpoints as before. */
function checkpointElsewhere(sqlite: DatabaseSync, file: string, warn: (message: string) => void) {
  sqlite.exec('PRAGMA wal_autocheckpoint = 0');
  return startCheckpointer(file, (message, stopped) => {
    warn(`database checkpoint: ${message}`);
    if (stopped && sqlite.isOpen) sqlite.exec('PRAGMA wal_autocheckpoint = 1000');
  });
}

/** Times and sequence numbers are BIGINT; they fit a JavaScript number (below 2^53), so read them as one. */
const INT8_OID = 20;

function createPool(pgModule: typeof pg, url: string): pg.Pool {
  const defaultParser = pgModule.types.getTypeParser as (
    oid: number,
    format?: string,
  ) => (value: string) => unknown;
  const pool = new pgModule.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID ? Number : defaultParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
    },
  });
  // A client that loses its connection must not crash the process: an idle one is dropped by the pool
  // (its 'error'), a busy one also fails its query, which the caller sees (503); the next query reconnects.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

async function migrate(db: Db, engine: DatabaseConfig['engine']): Promise<void> {
  if (engine === 'sqlite') return migrateWith(db, engine, undefined);
  // Several instances may start at once: a session-level advisory lock (per schema) lets one migrate
  // while the others wait, then find nothing left to do. The migration tables live in the schema the
  // connection uses (search_path), so several schemas in one database each keep their own history.
  await db.connection().execute(async (connection) => {
    const schema = (await sql<{ schema: string }>`select current_schema() as schema`.execute(connection))
      .rows[0]?.schema;
    const lockKey = `hashproof-migrate:${schema ?? 'public'}`;
    await sql`select pg_advisory_lock(hashtext(${lockKey}))`.execute(connection);
    try {
      // Kysely's introspection reads the catalog of every schema; a schema another client drops at that
      // moment makes it fail with "schema … does not exist" or "relation "<schema>.<table>" does not
      // exist" naming that other schema. Try again then.
      for (let attempt = 1; ; attempt++) {
        try {
          await migrateWith(connection, engine, schema);
          break;
        } catch (error) {
          const message = error instanceof Error ? error.message : '';
          const other =
            /schema "([^"]+)" does not exist/.exec(message)?.[1] ??
            /relation "([^".]+)\.[^"]+" does not exist/.exec(message)?.[1];
          if (other === undefined || other === schema || attempt >= 5) throw error;
        }
      }
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${lockKey}))`.execute(connection);
    }
  });
}

async function migrateWith(
  db: Db,
  engine: DatabaseConfig['engine'],
  migrationTableSchema: string | undefined,
): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: migrationProvider({ engine }),
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(
      `database migration ${failed} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
    );
  }
}
