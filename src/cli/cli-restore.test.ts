import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { scratchDirs } from '../../test/helper.ts';
import { run } from '../../test/process.ts';
import { Keyring } from '../keys/keyring.ts';
import { CLI } from './cli-test-setup.ts';

// A backup folder is a folder anyone with write access to the backups may have altered. These tests
// write such folders by hand and run `hashproof restore` on them, for a service on either engine
// (restore reads the configuration only; it never connects to PostgreSQL).

const scratch = scratchDirs();
const ENGINES = ['sqlite', 'postgres'] as const;
type Engine = (typeof ENGINES)[number];

const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The environment of a machine to restore onto, with its keys made (as a service's first start would). */
function machine(engine: Engine, withKeys = true) {
  const dir = scratch();
  const env = {
    DATABASE_URL:
      engine === 'sqlite'
        ? `sqlite:${path.join(dir, 'hashproof.db')}`
        : 'postgres://postgres@127.0.0.1:5432/test',
    SIGNING_KEYS_DIR: path.join(dir, 'keys'),
  };
  if (withKeys) Keyring.open(env.SIGNING_KEYS_DIR);
  return { dir, env };
}

const hashproof = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env } });

/** Every file below `dir` with the SHA-256 of its bytes: what a refused restore must leave as it was. */
function snapshot(dir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const file = path.join(entry.parentPath, entry.name);
      files[path.relative(dir, file)] = sha256(readFileSync(file));
    }
  return files;
}

const hmacName = (keysDir: string) => readdirSync(keysDir).find((name) => name.startsWith('hmac-'))!;
const forgedKey = JSON.stringify({
  keyId: 'hmac-0000000000000000',
  algorithm: 'hmac-sha256',
  secret: 'AAAA',
});
const databaseBytes = () => {
  const file = path.join(scratch(), 'made.db');
  const db = new DatabaseSync(file);
  db.exec('create table proofs (id text)');
  db.close();
  return readFileSync(file);
};
const NOTE = 'the database is in PostgreSQL\n';

/** Writes `files` into a new folder (directories 0700, files 0600). */
function folderWith(files: Record<string, string | Buffer>): string {
  const folder = path.join(scratch(), 'backup');
  mkdirSync(folder, { mode: 0o700 });
  for (const [file, bytes] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(folder, file)), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(folder, file), bytes, { mode: 0o600 });
  }
  return folder;
}

type Listing = Record<string, { sha256: string; sizeBytes: number }>;

/** backup.json as the version before this one wrote it (each path with its SHA-256), or as this one does. */
function writeManifest(folder: string, engine: Engine, listing: Listing, version: 1 | 2): void {
  const roleOf = (file: string) =>
    file === 'hashproof.db'
      ? 'database'
      : file === 'postgresql.txt'
        ? 'note'
        : file.startsWith('log-state/')
          ? 'log-state'
          : 'key';
  const manifest =
    version === 1
      ? {
          createdAt: new Date().toISOString(),
          engine,
          files: Object.fromEntries(Object.entries(listing).map(([f, l]) => [f, l.sha256])),
        }
      : {
          version: 2,
          createdAt: new Date().toISOString(),
          engine,
          files: Object.entries(listing).map(([file, l]) => ({ path: file, role: roleOf(file), ...l })),
        };
  writeFileSync(path.join(folder, 'backup.json'), JSON.stringify(manifest), { mode: 0o600 });
}

const listingOf = (files: Record<string, string | Buffer>): Listing =>
  Object.fromEntries(
    Object.entries(files).map(([file, bytes]) => [
      file,
      { sha256: sha256(bytes), sizeBytes: Buffer.byteLength(bytes) },
    ]),
  );

/** The database (or the note) a backup of `engine` must list. */
const mainFile = (engine: Engine): Record<string, string | Buffer> =>
  engine === 'sqlite' ? { 'hashproof.db': databaseBytes() } : { 'postgresql.txt': NOTE };

/** A refusal: exit 1, one line on standard error that says why, and nothing on the machine changed. */
async function refused(folder: string, target: ReturnType<typeof machine>, why: RegExp, what: string) {
  const before = snapshot(target.dir);
  const result = await hashproof(['restore', '--from', folder], target.env);
  assert.equal(result.code, 1, `${what}: ${result.stdout}${result.stderr}`);
  assert.equal(result.stderr.trim().split('\n').length, 1, `${what}: one line: ${result.stderr}`);
  assert.match(result.stderr, /^hashproof: restore refused: /, what);
  assert.match(result.stderr, why, what);
  assert.match(result.stderr, /nothing was restored/, what);
  assert.deepEqual(snapshot(target.dir), before, `${what}: nothing written`);
}

for (const engine of ENGINES) {
  for (const version of [1, 2] as const) {
    test(`${engine}, backup.json of version ${version}: a log-state entry named like a key never reaches the keys`, async () => {
      const target = machine(engine);
      const key = hmacName(target.env.SIGNING_KEYS_DIR);
      const files = { ...mainFile(engine), [`log-state/${key}`]: forgedKey };
      const folder = folderWith(files);
      writeManifest(folder, engine, listingOf(files), version);
      await refused(folder, target, new RegExp(`log-state/${key}`), 'a key as log state');
    });
  }

  test(`${engine}: restore reads only the listed files, each a plain relative path and a regular file inside the folder`, async () => {
    const target = machine(engine, false);
    const outside = scratch();
    const stolen = '{"a": "file elsewhere on the machine"}';
    writeFileSync(path.join(outside, 'hmac-1111111111111111.json'), stolen);
    const main = mainFile(engine);
    const key = 'keys/hmac-1111111111111111.json';
    const stolenListing = listingOf({ [key]: stolen })[key]!;
    // Each case lays out the folder beside the database (or note), and backup.json lists one more file.
    const cases: {
      what: string;
      why: RegExp;
      version: 1 | 2;
      listed?: string;
      lay: (folder: string) => void;
    }[] = [
      {
        what: 'a listed file that is a symbolic link to a file outside',
        why: /keys\/hmac-1111111111111111\.json" is a symbolic link/,
        version: 1,
        lay: (folder) => {
          mkdirSync(path.join(folder, 'keys'));
          symlinkSync(path.join(outside, 'hmac-1111111111111111.json'), path.join(folder, key));
        },
      },
      {
        what: 'a directory on the way that is a symbolic link',
        why: /"keys" is a symbolic link/,
        version: 1,
        lay: (folder) => symlinkSync(outside, path.join(folder, 'keys')),
      },
      {
        what: 'a path that climbs out of the folder',
        why: /not a plain relative path inside the backup folder/,
        version: 1,
        listed: path.join('keys', '..', '..', '..', path.basename(outside), 'hmac-1111111111111111.json'),
        lay: () => {},
      },
      {
        what: 'an absolute path',
        why: /not a plain relative path inside the backup folder \(it is absolute\)/,
        version: 2,
        listed: path.join(outside, 'hmac-1111111111111111.json'),
        lay: () => {},
      },
      {
        what: 'a named pipe listed as a key (reading it would wait for ever)',
        why: /not a regular file/,
        version: 2,
        lay: (folder) => {
          mkdirSync(path.join(folder, 'keys'));
          execFileSync('mkfifo', [path.join(folder, key)]);
        },
      },
      {
        what: 'a file whose SHA-256 is not the listed one',
        why: /keys\/hmac-1111111111111111\.json" does not have the SHA-256 backup\.json lists/,
        version: 2,
        lay: (folder) => {
          mkdirSync(path.join(folder, 'keys'));
          writeFileSync(path.join(folder, key), stolen.toUpperCase());
        },
      },
      {
        what: 'a file listed under a name a backup never holds',
        why: /lists "keys\/authorized_keys" as "key", which a backup never holds/,
        version: 2,
        listed: 'keys/authorized_keys',
        lay: () => {},
      },
    ];
    for (const { what, why, version, listed = key, lay } of cases) {
      const folder = folderWith(main);
      lay(folder);
      writeManifest(folder, engine, { ...listingOf(main), [listed]: stolenListing }, version);
      await refused(folder, target, why, what);
    }
  });

  test(`${engine}: the ${engine === 'sqlite' ? 'database' : 'PostgreSQL note'} must be listed; a file not listed is never restored, and restore says so`, async () => {
    const target = machine(engine, false);
    const key = 'keys/hmac-2222222222222222.json';
    const unlisted = { 'hashproof.db': databaseBytes(), 'keys/hmac-3333333333333333.json': forgedKey };
    // Without the database (or note) listed, the folder is refused whatever else it holds.
    const bare = folderWith({ ...unlisted, [key]: forgedKey });
    // (Version 1 wrote no note for PostgreSQL, so a version 1 backup of it lists none.)
    writeManifest(bare, engine, listingOf({ [key]: forgedKey }), engine === 'sqlite' ? 1 : 2);
    await refused(
      bare,
      target,
      new RegExp(`does not list the ${engine === 'sqlite' ? 'database' : 'PostgreSQL note'}`),
      'nothing main listed',
    );

    // A backup of this version, and one of the version before (which wrote no note for PostgreSQL).
    for (const version of [2, 1] as const) {
      const onto = machine(engine, false);
      const listed = {
        ...(version === 1 && engine === 'postgres' ? {} : mainFile(engine)),
        [key]: forgedKey,
      };
      const folder = folderWith({
        ...listed,
        'keys/hmac-3333333333333333.json': forgedKey,
        'hashproof.dump': 'PGDMP',
      });
      writeManifest(folder, engine, listingOf(listed), version);
      const madeAt = new Date('2026-01-02T03:04:05Z');
      utimesSync(path.join(folder, key), madeAt, madeAt);
      const result = await hashproof(['restore', '--from', folder], onto.env);
      assert.equal(result.code, 0, result.stderr);
      assert.match(
        result.stdout,
        /not restored \(not listed in backup\.json\): .*"keys\/hmac-3333333333333333\.json"/,
      );
      assert.match(result.stdout, /"hashproof\.dump"/);
      const restored = path.join(onto.env.SIGNING_KEYS_DIR, 'hmac-2222222222222222.json');
      assert.match(result.stdout, new RegExp(`restored ${restored}`));
      assert.deepEqual(readdirSync(onto.env.SIGNING_KEYS_DIR), ['hmac-2222222222222222.json']);
      assert.equal(statSync(restored).mode & 0o777, 0o600);
      assert.equal(
        statSync(restored).mtimeMs,
        madeAt.getTime(),
        'a key keeps its time (the log key: its validFrom)',
      );
      assert.equal(statSync(onto.env.SIGNING_KEYS_DIR).mode & 0o777, 0o700);
      if (engine === 'sqlite') assert.equal(statSync(onto.env.DATABASE_URL.slice(7)).mode & 0o777, 0o600);
    }
  });
}

test('a backup.json that lists no SHA-256 is refused: make a new backup', async () => {
  const target = machine('sqlite');
  const files = mainFile('sqlite');
  const folder = folderWith(files);
  writeFileSync(
    path.join(folder, 'backup.json'),
    JSON.stringify({ engine: 'sqlite', files: Object.keys(files) }),
  );
  await refused(
    folder,
    target,
    /lists no SHA-256 .*older version; make a new one with hashproof backup/,
    'no hashes',
  );
});

test('usage: restore without --from, or of a folder that does not exist, exits 2', async () => {
  const target = machine('sqlite');
  const missing = await hashproof(['restore'], target.env);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--from/);
  const nowhere = await hashproof(['restore', '--from', path.join(target.dir, 'nowhere')], target.env);
  assert.equal(nowhere.code, 2);
  assert.match(nowhere.stderr, /no such directory/);
});
