import { execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isPostgres } from './helper.ts';

/** A copy of a stopped test server's database, as an operator's backup holds it. */
export interface Backup {
  /** Puts this copy back in place of the data directory's database (the server must be stopped). */
  restore(): void;
  /** Removes the copy. */
  discard(): void;
}

const SQLITE_FILES = ['hashproof.db', 'hashproof.db-wal', 'hashproof.db-shm'];

/**
 * Backs up the database of a stopped test server (test/helper.ts, `startServer`): its SQLite file with
 * whatever write-ahead log it left, or its PostgreSQL schema with pg_dump; `restore` puts it back with
 * a plain file copy, or by dropping the schema and replaying the dump with psql.
 */
export function backUp(dataDir: string): Backup {
  const copy = mkdtempSync(path.join(os.tmpdir(), 'hashproof-backup-'));
  if (!isPostgres()) {
    const files = SQLITE_FILES.filter((name) => existsSync(path.join(dataDir, name)));
    for (const name of files) copyFileSync(path.join(dataDir, name), path.join(copy, name));
    return {
      restore() {
        for (const name of SQLITE_FILES) rmSync(path.join(dataDir, name), { force: true });
        for (const name of files) copyFileSync(path.join(copy, name), path.join(dataDir, name));
      },
      discard: () => rmSync(copy, { recursive: true, force: true }),
    };
  }
  const url = process.env.TEST_DATABASE_URL ?? '';
  const schema = readFileSync(path.join(dataDir, '.postgres-schema'), 'utf8');
  const dump = path.join(copy, 'dump.sql');
  execFileSync('pg_dump', ['--schema', schema, '--no-owner', '--file', dump, url]);
  return {
    restore() {
      // Quiet: psql reports each table the drop cascades to; an error still throws, with its output.
      const quiet: ExecFileSyncOptions = { stdio: ['ignore', 'ignore', 'pipe'] };
      execFileSync(
        'psql',
        ['-q', '-v', 'ON_ERROR_STOP=1', '-c', `drop schema ${schema} cascade`, url],
        quiet,
      );
      execFileSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', '-f', dump, url], quiet);
    },
    discard: () => rmSync(copy, { recursive: true, force: true }),
  };
}
