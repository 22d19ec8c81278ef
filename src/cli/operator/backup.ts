import { randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readdir, realpath, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Config } from '../../config.ts';
import { isKeyFileName } from '../../keys/key-directory.ts';
import { isLogRecordName } from '../../log/log-service.ts';
import {
  digestOf,
  exists,
  readListed,
  readManifest,
  unlistedIn,
  withFile,
  type Digest,
} from './backup-files.ts';
import {
  BackupRefused,
  DATABASE_FILE,
  MANIFEST,
  POSTGRES_NOTE,
  shown,
  type ListedFile,
  type Manifest,
  type Role,
} from './backup-manifest.ts';
import { EXIT, print, UsageError } from '../output.ts';
import { serviceConfig } from './service-config.ts';

/**
 * `hashproof backup --out <dir>` and `hashproof restore --from <dir>` (docs/operations.md, "Backup and
 * restore"): the keys, the record of the log's latest published checkpoint, and, for the embedded
 * database, a consistent copy made while the service runs. The configuration is the service's own
 * (DATABASE_URL, SIGNING_KEYS_DIR, LOG_STATE_DIR).
 */

/** Copies `from` to a new file `to` (0600, never over an existing one, flushed), returning its digest. */
async function copyPrivate(from: string, to: string): Promise<Digest> {
  return withFile(from, (source) =>
    withFile(
      to,
      async (target) => {
        const digest = await digestOf(source, target);
        await target.sync();
        return digest;
      },
      'wx',
    ),
  );
}

/** The names in `dir` that `wanted` accepts; none when it does not exist. */
async function namesIn(dir: string, wanted: (name: string) => boolean): Promise<string[]> {
  try {
    return (await readdir(dir)).filter(wanted);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Copies the newest record file of each log in `dir`. The service replaces the record as the log
 * grows (it adds the next size, then removes the older), so a file that vanished is looked for again.
 */
async function copyRecord(dir: string, out: string, listed: ListedFile[]): Promise<void> {
  await mkdir(path.join(out, 'log-state'), { mode: 0o700 });
  for (let attempt = 1; ; attempt++) {
    const newest = new Map<string, { name: string; size: number }>();
    for (const name of await namesIn(dir, isLogRecordName)) {
      const log = name.slice(0, name.lastIndexOf('-'));
      const size = Number(name.slice(name.lastIndexOf('-') + 1));
      if ((newest.get(log)?.size ?? -1) < size) newest.set(log, { name, size });
    }
    const copied: ListedFile[] = [];
    try {
      for (const { name } of newest.values()) {
        const file = `log-state/${name}`;
        await rm(path.join(out, file), { force: true });
        copied.push({
          path: file,
          role: 'log-state',
          ...(await copyPrivate(path.join(dir, name), path.join(out, file))),
        });
      }
      listed.push(...copied);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt === 10) throw error;
    }
  }
}

export async function backup(values: { out?: string }): Promise<number> {
  if (values.out === undefined) throw new UsageError('backup needs --out <directory>');
  const config = serviceConfig();
  const out = path.resolve(values.out);
  const existed = await exists(out);
  if ((await namesIn(out, () => true)).length > 0)
    throw new UsageError(`--out ${out}: the directory is not empty`);
  await checkSources(config);
  await mkdir(out, { recursive: true, mode: 0o700 });
  try {
    await chmod(out, 0o700);
    await backupInto(out, config);
  } catch (error) {
    // Nothing half made is left: a folder this command made goes, one that was there is empty again.
    if (existed)
      await Promise.all((await readdir(out)).map((name) => rm(path.join(out, name), { recursive: true })));
    else await rm(out, { recursive: true, force: true });
    throw error;
  }
  return EXIT.ok;
}

/**
 * What a backup copies must be there before anything is written: the signing keys and, embedded, the
 * database. Run in the wrong directory, the default paths (./data/…) name nothing: each is named, with
 * the variable that sets it.
 */
async function checkSources(config: Config): Promise<void> {
  if (config.database.engine === 'sqlite' && !(await exists(config.database.path)))
    throw new UsageError(
      `no database at ${config.database.path} (DATABASE_URL; the default sqlite:./data/hashproof.db is ` +
        `relative to the directory the command runs in): run it where the service runs, or set DATABASE_URL`,
    );
  if ((await namesIn(config.signingKeysDir, isKeyFileName)).length === 0)
    throw new UsageError(
      `no signing keys in ${config.signingKeysDir} (SIGNING_KEYS_DIR): run it where the service runs, or set SIGNING_KEYS_DIR`,
    );
}

async function backupInto(out: string, config: Config): Promise<void> {
  const files: ListedFile[] = [];
  const list = async (file: string, role: Role) =>
    files.push({ path: file, role, ...(await withFile(path.join(out, file), (handle) => digestOf(handle))) });
  // The log's record first: a database copied after it holds at least what it records, so the copy
  // restored anywhere can go on without the log refusing (the other order could stop the log).
  await copyRecord(config.logStateDir, out, files);
  await mkdir(path.join(out, 'keys'), { mode: 0o700 });
  for (const name of await namesIn(config.signingKeysDir, isKeyFileName)) {
    const file = `keys/${name}`;
    files.push({
      path: file,
      role: 'key',
      ...(await copyPrivate(path.join(config.signingKeysDir, name), path.join(out, file))),
    });
  }
  if (config.database.engine === 'sqlite') {
    const target = path.join(out, DATABASE_FILE);
    copyDatabase(config.database.path, target);
    await chmod(target, 0o600);
    await list(DATABASE_FILE, 'database');
  } else {
    await withFile(path.join(out, POSTGRES_NOTE), (note) => note.writeFile(POSTGRES_NOTE_TEXT), 'wx');
    await list(POSTGRES_NOTE, 'note');
  }
  const manifest: Manifest = {
    version: 2,
    createdAt: new Date().toISOString(),
    engine: config.database.engine,
    files,
  };
  await withFile(
    path.join(out, MANIFEST),
    (handle) => handle.writeFile(JSON.stringify(manifest, null, 2) + '\n'),
    'wx',
  );
  print(`backed up ${files.length} files to ${out}`);
  if (config.database.engine === 'postgres') {
    print(
      'PostgreSQL is not copied by this command: back it up with pg_dump --format=custom (or continuous ' +
        'archiving) right after this, as docs/operations.md says; the keys and the log record are in the backup.',
    );
  }
}

/** One consistent copy of the embedded database: VACUUM INTO reads one snapshot while the service writes (WAL). */
function copyDatabase(file: string, target: string): void {
  let source;
  try {
    source = new DatabaseSync(file, { readOnly: true });
    source.exec(`VACUUM INTO '${target.replaceAll("'", "''")}'`);
  } catch (error) {
    throw new Error(`cannot copy the database ${file} (DATABASE_URL): ${(error as Error).message}`);
  } finally {
    source?.close();
  }
}

const POSTGRES_NOTE_TEXT =
  'This backup holds the signing keys and the log record of a hashproof service on PostgreSQL.\n' +
  'The database is not in it: it is backed up with pg_dump (or continuous archiving) beside it and\n' +
  'restored with pg_restore, as docs/operations.md ("Backup and restore") says.\n';

/** Where a listed file goes on this machine; undefined for the PostgreSQL note, which stays. */
function targetOf(file: ListedFile, config: Config): string | undefined {
  const name = path.basename(file.path);
  switch (file.role) {
    case 'key':
      return path.join(config.signingKeysDir, name);
    case 'log-state':
      return path.join(config.logStateDir, name);
    case 'database':
      return config.database.engine === 'sqlite' ? config.database.path : undefined;
    case 'note':
      return undefined;
  }
}

export async function restore(values: { from?: string; force?: boolean }): Promise<number> {
  if (values.from === undefined) throw new UsageError('restore needs --from <directory>');
  const config = serviceConfig();
  // The folder named may be a link (a `latest` link); nothing inside it may.
  const folder = await realpath(values.from).catch(() => {
    throw new UsageError(`--from ${values.from}: no such directory`);
  });
  if (!(await stat(folder)).isDirectory()) throw new UsageError(`--from ${folder}: not a directory`);
  try {
    return await restoreFrom(folder, config, values.force === true);
  } catch (error) {
    if (!(error instanceof BackupRefused)) throw error;
    process.stderr.write(`hashproof: restore refused: ${error.message}; nothing was restored\n`);
    return EXIT.failed;
  }
}

async function restoreFrom(folder: string, config: Config, force: boolean): Promise<number> {
  const manifest = await readManifest(folder);
  if (manifest.engine !== config.database.engine)
    throw new UsageError(
      `the backup is of a ${manifest.engine} service; DATABASE_URL names ${config.database.engine}`,
    );
  // Keys first, the database last: a restore cut short leaves a database no newer than its record.
  const plan = manifest.files
    .map((file) => ({ file, target: targetOf(file, config) }))
    .sort((a, b) => PLACING_ORDER.indexOf(a.file.role) - PLACING_ORDER.indexOf(b.file.role));
  // What is here already, before a byte of the backup is read: a key or record of the same name must
  // be the same file (it is then kept), a database is replaced only with --force.
  const kept = new Set<string>();
  for (const { file, target } of plan) {
    if (target === undefined) continue;
    if (file.role === 'database') {
      if (!force && (await exists(target)))
        throw new UsageError(`${target} exists: stop the service and pass --force to replace it`);
      continue;
    }
    const existing = (await exists(target))
      ? await withFile(target, (handle) => digestOf(handle))
      : undefined;
    if (existing?.sha256 === file.sha256) kept.add(target);
    else if (existing !== undefined)
      throw new UsageError(
        `${target} exists and differs from the backup's ${file.path}: restore into an empty directory`,
      );
  }
  // Every listed file checked before anything is written; then each is copied and checked again.
  for (const { file } of plan) await readListed(folder, file);
  const staged: { file: ListedFile; target: string; temp: string }[] = [];
  try {
    for (const { file, target } of plan) {
      if (target === undefined || kept.has(target)) continue;
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      const temp = path.join(
        path.dirname(target),
        `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`,
      );
      staged.push({ file, target, temp });
      await withFile(temp, (handle) => readListed(folder, file, handle), 'wx');
    }
  } catch (error) {
    await Promise.all(staged.map(({ temp }) => rm(temp, { force: true })));
    throw error;
  }
  // Keys and records are added, never put over a file (link fails on one); the database replaces.
  for (const { file, target, temp } of staged) {
    if (file.role === 'database') {
      for (const suffix of ['-wal', '-shm']) await rm(target + suffix, { force: true });
      await rename(temp, target);
    } else {
      await link(temp, target);
      await rm(temp);
    }
    await withFile(path.dirname(target), (dir) => dir.sync());
    print(`restored ${target}`);
  }
  for (const target of kept) print(`kept ${target} (the same as the backup's)`);
  const unlisted = await unlistedIn(folder, new Set(manifest.files.map((file) => file.path)));
  if (unlisted.length > 0)
    print(
      `not restored (not listed in ${MANIFEST}): ${unlisted.slice(0, 10).map(shown).join(', ')}${unlisted.length > 10 ? ` and ${unlisted.length - 10} more` : ''}`,
    );
  if (config.database.engine === 'postgres')
    print('the PostgreSQL database is not in the backup: restore it with pg_restore (docs/operations.md)');
  return EXIT.ok;
}

const PLACING_ORDER: Role[] = ['key', 'log-state', 'database', 'note'];
