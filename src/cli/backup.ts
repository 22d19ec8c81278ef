import { createHash } from 'node:crypto';
import { chmod, copyFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { loadConfig } from '../config.ts';
import { print, UsageError } from './output.ts';

/**
 * `hashproof backup --out <dir>` and `hashproof restore --from <dir>` (docs/operations.md, "Backup and
 * restore"): the keys, the record of the log's latest published checkpoint, and, for the embedded
 * database, a consistent copy made while the service runs. The configuration is the service's own
 * (DATABASE_URL, SIGNING_KEYS_DIR, LOG_STATE_DIR).
 */

const DATABASE_FILE = 'hashproof.db';
const MANIFEST = 'backup.json';
/** The files of the log's record of published checkpoints (log/log-state.ts). */
const LOG_RECORD = /^log-checkpoint-[0-9a-f]{16}-\d+$/;

interface Manifest {
  createdAt: string;
  engine: 'sqlite' | 'postgres';
  /** Every file of the backup, by path inside it, with its SHA-256. */
  files: Record<string, string>;
}

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

async function filesOf(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((entry) => entry.isFile() && !entry.name.endsWith('.tmp'))
      .map((entry) => entry.name);
  } catch {
    return [];
  }
}

async function copyPrivate(from: string, to: string): Promise<void> {
  await copyFile(from, to);
  await chmod(to, 0o600);
}

/**
 * Copies the newest record file of each log in `dir`. The service replaces the record as the log
 * grows (it adds the next size, then removes the older), so a file that vanished is looked for again.
 */
async function copyRecord(dir: string, into: string, files: Record<string, string>): Promise<void> {
  await mkdir(into, { recursive: true, mode: 0o700 });
  for (let attempt = 1; ; attempt++) {
    const newest = new Map<string, { name: string; size: number }>();
    for (const name of (await filesOf(dir)).filter((n) => LOG_RECORD.test(n))) {
      const log = name.slice(0, name.lastIndexOf('-'));
      const size = Number(name.slice(name.lastIndexOf('-') + 1));
      if ((newest.get(log)?.size ?? -1) < size) newest.set(log, { name, size });
    }
    try {
      for (const { name } of newest.values()) {
        await copyPrivate(path.join(dir, name), path.join(into, name));
        files[`log-state/${name}`] = await sha256(path.join(into, name));
      }
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 10) throw error;
    }
  }
}

export async function backup(values: { out?: string }): Promise<number> {
  if (values.out === undefined) throw new UsageError('backup needs --out <directory>');
  const config = loadConfig();
  const out = path.resolve(values.out);
  if ((await filesOf(out)).length > 0) throw new UsageError(`--out ${out}: the directory is not empty`);
  await mkdir(path.join(out, 'keys'), { recursive: true, mode: 0o700 });
  await chmod(out, 0o700);
  const files: Record<string, string> = {};
  // The log's record first: a database copied after it holds at least what it records, so the copy
  // restored anywhere can go on without the log refusing (the other order could stop the log).
  const copyDir = async (from: string, into: string, only: (name: string) => boolean) => {
    await mkdir(path.join(out, into), { recursive: true, mode: 0o700 });
    for (const name of (await filesOf(from)).filter(only)) {
      await copyPrivate(path.join(from, name), path.join(out, into, name));
      files[`${into}/${name}`] = await sha256(path.join(out, into, name));
    }
  };
  await copyRecord(config.logStateDir, path.join(out, 'log-state'), files);
  await copyDir(config.signingKeysDir, 'keys', (name) => !LOG_RECORD.test(name));
  if (config.database.engine === 'sqlite') {
    const target = path.join(out, DATABASE_FILE);
    // VACUUM INTO reads one consistent snapshot, while the service goes on writing (WAL).
    const source = new DatabaseSync(config.database.path, { readOnly: true });
    try {
      source.exec(`VACUUM INTO '${target.replaceAll("'", "''")}'`);
    } finally {
      source.close();
    }
    await chmod(target, 0o600);
    files[DATABASE_FILE] = await sha256(target);
  }
  const manifest: Manifest = { createdAt: new Date().toISOString(), engine: config.database.engine, files };
  await writeFile(path.join(out, MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  print(`backed up ${Object.keys(files).length} files to ${out}`);
  if (config.database.engine === 'postgres') {
    print(
      'PostgreSQL is not copied by this command: back it up with pg_dump --format=custom (or continuous ' +
        'archiving) right after this, as docs/operations.md says; the keys and the log record are in the backup.',
    );
  }
  return 0;
}

export async function restore(values: { from?: string; force?: boolean }): Promise<number> {
  if (values.from === undefined) throw new UsageError('restore needs --from <directory>');
  const config = loadConfig();
  const from = path.resolve(values.from);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(path.join(from, MANIFEST), 'utf8')) as Manifest;
  } catch {
    throw new UsageError(`--from ${from}: not a backup (no readable ${MANIFEST})`);
  }
  for (const [file, hash] of Object.entries(manifest.files)) {
    if ((await sha256(path.join(from, file)).catch(() => '')) !== hash)
      throw new UsageError(`--from ${from}: ${file} is missing or damaged`);
  }
  if (manifest.engine !== config.database.engine)
    throw new UsageError(
      `the backup is of a ${manifest.engine} service; DATABASE_URL names ${config.database.engine}`,
    );
  // Keys: every missing file is put back; a key that exists must be the same, or nothing is restored.
  const keys = Object.keys(manifest.files).filter((file) => file.startsWith('keys/'));
  for (const file of keys) {
    const existing = await sha256(path.join(config.signingKeysDir, path.basename(file))).catch(
      () => undefined,
    );
    if (existing !== undefined && existing !== manifest.files[file])
      throw new UsageError(
        `${config.signingKeysDir} holds another ${path.basename(file)}: restore into an empty directory`,
      );
  }
  if (config.database.engine === 'sqlite') {
    const target = config.database.path;
    const exists = await stat(target).then(
      () => true,
      () => false,
    );
    if (exists && !values.force)
      throw new UsageError(`${target} exists: stop the service and pass --force to replace it`);
  }
  await mkdir(config.signingKeysDir, { recursive: true, mode: 0o700 });
  for (const file of keys)
    await copyPrivate(path.join(from, file), path.join(config.signingKeysDir, path.basename(file)));
  // The log's record is only ever added to: a newer record already here stays the one that counts, so a
  // database older than what the log published is refused by the service rather than forking the log.
  await mkdir(config.logStateDir, { recursive: true, mode: 0o700 });
  for (const file of Object.keys(manifest.files).filter((f) => f.startsWith('log-state/'))) {
    await copyPrivate(path.join(from, file), path.join(config.logStateDir, path.basename(file)));
  }
  if (config.database.engine === 'sqlite') {
    const target = config.database.path;
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    for (const suffix of ['-wal', '-shm']) await rm(target + suffix, { force: true });
    await copyPrivate(path.join(from, DATABASE_FILE), target);
    print(`restored the database to ${target}, the keys to ${config.signingKeysDir}`);
  } else {
    print(
      `restored the keys to ${config.signingKeysDir}; restore PostgreSQL with pg_restore (docs/operations.md)`,
    );
  }
  return 0;
}
