import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { DatabaseConfig } from '../config.ts';
import { createNodeSqliteDialect, openSqliteFile } from './node-sqlite-dialect.ts';
import { migrationProvider } from './migrations/index.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  engine: DatabaseConfig['engine'];
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Opens the configured database and brings its schema up to date. */
export async function openDatabase(config: DatabaseConfig): Promise<DatabaseHandle> {
  if (config.engine !== 'sqlite') {
    throw new Error('DATABASE_URL: PostgreSQL needs the pg dialect, which this build does not include');
  }
  if (config.path !== ':memory:') mkdirSync(path.dirname(config.path), { recursive: true });
  const db = new Kysely<Database>({ dialect: createNodeSqliteDialect(openSqliteFile(config.path)) });
  try {
    await migrate(db, config.engine);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return {
    db,
    engine: config.engine,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

async function migrate(db: Db, engine: DatabaseConfig['engine']): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider({ engine }) });
  const { error, results } = await migrator.migrateToLatest();
  if (error !== undefined) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(
      `database migration ${failed} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
    );
  }
}
