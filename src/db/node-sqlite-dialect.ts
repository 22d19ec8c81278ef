import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';

type SqlValue = null | number | bigint | string | Uint8Array;

/**
 * Gives Kysely's SqliteDialect the statement interface it expects, over Node's built-in node:sqlite,
 * so nothing native has to compile. Prepared statements are cached by SQL text (the queries are few and
 * fixed), which spares a parse per query.
 */
export function createNodeSqliteDialect(database: DatabaseSync, cacheSize = 200): SqliteDialect {
  const cache = new Map<string, SqliteStatement>();
  const adapter: SqliteDatabase = {
    close: () => {
      cache.clear();
      database.close();
    },
    prepare(sql) {
      let statement = cache.get(sql);
      if (statement === undefined) {
        statement = wrap(database.prepare(sql));
        if (cache.size >= cacheSize) cache.delete(cache.keys().next().value as string);
        cache.set(sql, statement);
      }
      return statement;
    },
  };
  return new SqliteDialect({ database: adapter });
}

function wrap(statement: StatementSync): SqliteStatement {
  const params = (values: ReadonlyArray<unknown>) => values as SqlValue[];
  return {
    reader: statement.columns().length > 0,
    all: (values) => statement.all(...params(values)),
    run: (values) => statement.run(...params(values)),
    iterate: (values) => statement.iterate(...params(values)),
  };
}

/** Opens the embedded database durably: WAL, and every commit synced to disk before it returns. */
export function openSqliteFile(file: string): DatabaseSync {
  const database = new DatabaseSync(file);
  database.exec(`
    PRAGMA journal_mode = WAL;
    PRAGMA synchronous = FULL;
    PRAGMA busy_timeout = 5000;
    PRAGMA foreign_keys = ON;
  `);
  return database;
}
