import { isKeyFileName } from '../../keys/key-directory.ts';
import { isLogRecordName } from '../../log/log-service.ts';

/**
 * `backup.json`, the list of a backup's files, and the rules `hashproof restore` holds it to before it
 * reads any other file of the folder (docs/operations.md, "What restore checks and refuses").
 * A backup folder may have been altered by anyone who could write to it: nothing in it is trusted
 * beyond these rules.
 */

export const MANIFEST = 'backup.json';
/** The embedded database's copy. */
export const DATABASE_FILE = 'hashproof.db';
/** What a backup of a service on PostgreSQL holds in place of its database: where that database is. */
export const POSTGRES_NOTE = 'postgresql.txt';
/** Larger than any backup.json a real backup has (a line per key and record). */
export const MANIFEST_MAX_BYTES = 4 * 1024 * 1024;
const MAX_FILES = 10_000;

/** What a file of the backup is, and so where restore puts it. */
export type Role = 'database' | 'note' | 'key' | 'log-state';

export interface ListedFile {
  /** Relative to the backup folder, `/` between its parts. */
  path: string;
  role: Role;
  /** Absent in the backups of version 1 (which listed hashes alone). */
  sizeBytes?: number;
  sha256: string;
}

export interface Manifest {
  version: 2;
  createdAt: string;
  engine: 'sqlite' | 'postgres';
  files: ListedFile[];
}

/** A listed file as read, before its role is checked. */
type Listed = Omit<ListedFile, 'role'> & { role: Role | undefined };

/** A backup folder that failed a check: nothing is restored (exit 1). */
export class BackupRefused extends Error {}

/**
 * Why `listed` is not a plain relative path inside the backup folder, or undefined when it is one: no
 * absolute path, no empty, `.` or `..` part, no backslash, no control character (NUL included).
 */
export function pathProblem(listed: string): string | undefined {
  if (listed === '' || listed.length > 1024) return 'empty or too long';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(listed)) return 'it holds a control character';
  if (listed.includes('\\')) return 'it holds a backslash';
  if (listed.startsWith('/')) return 'it is absolute';
  if (listed.split('/').some((part) => part === '' || part === '.' || part === '..'))
    return 'it has an empty, "." or ".." part';
  return undefined;
}

/** The role of a listed path: a backup holds these files and no others. */
function roleOf(file: string): Role | undefined {
  if (file === DATABASE_FILE) return 'database';
  if (file === POSTGRES_NOTE) return 'note';
  const [dir, name, ...rest] = file.split('/');
  if (name === undefined || rest.length > 0) return undefined;
  if (dir === 'keys' && isKeyFileName(name)) return 'key';
  if (dir === 'log-state' && isLogRecordName(name)) return 'log-state';
  return undefined;
}

/** `text` shown on one line, control characters escaped: the folder's names are anyone's. */
export const shown = (text: string): string =>
  JSON.stringify(text).replace(
    /[\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isSha256 = (value: unknown): value is string =>
  typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);

/**
 * The manifest in `text`, checked whole: every listed path plain, relative and one a backup holds, in
 * its role, listed once, with its SHA-256; the database (the note, for PostgreSQL) listed. Throws
 * `BackupRefused` saying what is wrong. A backup of version 1 (`files` maps each path to its SHA-256)
 * is read as well.
 */
export function parseManifest(text: string): Manifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BackupRefused(`${MANIFEST} is not JSON`);
  }
  if (!isObject(value) || (value.engine !== 'sqlite' && value.engine !== 'postgres'))
    throw new BackupRefused(`${MANIFEST} is not a backup's list of files (no engine)`);
  const engine = value.engine;
  const files = value.version === 2 ? listedFiles(value.files) : listedFilesOfVersion1(value.files);
  const seen = new Set<string>();
  for (const file of files) {
    const problem = pathProblem(file.path);
    if (problem !== undefined)
      throw new BackupRefused(
        `${MANIFEST} lists ${shown(file.path)}, which is not a plain relative path inside the backup folder (${problem})`,
      );
    if (file.role === undefined || roleOf(file.path) !== file.role)
      throw new BackupRefused(
        `${MANIFEST} lists ${shown(file.path)}${file.role === undefined ? '' : ` as ${shown(file.role)}`}, which a backup never holds`,
      );
    if (seen.has(file.path)) throw new BackupRefused(`${MANIFEST} lists ${shown(file.path)} twice`);
    seen.add(file.path);
  }
  const [needed, wrong] =
    engine === 'sqlite' ? [DATABASE_FILE, POSTGRES_NOTE] : [POSTGRES_NOTE, DATABASE_FILE];
  // Version 1 wrote no note for PostgreSQL: its backups hold keys and records alone, which is all restore writes.
  if (!seen.has(needed) && (value.version === 2 || engine === 'sqlite'))
    throw new BackupRefused(
      `${MANIFEST} does not list ${engine === 'sqlite' ? 'the database' : 'the PostgreSQL note'} (${needed}) with its SHA-256`,
    );
  if (seen.has(wrong)) throw new BackupRefused(`${MANIFEST} of a ${engine} service lists ${wrong}`);
  return { version: 2, createdAt: String(value.createdAt), engine, files: files as ListedFile[] };
}

function listedFiles(files: unknown): Listed[] {
  if (!Array.isArray(files) || files.length > MAX_FILES)
    throw new BackupRefused(`${MANIFEST} has no list of at most ${MAX_FILES} files`);
  return files.map((file: unknown) => {
    if (
      !isObject(file) ||
      typeof file.path !== 'string' ||
      typeof file.role !== 'string' ||
      !Number.isSafeInteger(file.sizeBytes) ||
      (file.sizeBytes as number) < 0 ||
      !isSha256(file.sha256)
    )
      throw new BackupRefused(`${MANIFEST} lists a file without its path, role, size and SHA-256`);
    return {
      path: file.path,
      role: file.role as Role,
      sizeBytes: file.sizeBytes as number,
      sha256: file.sha256,
    };
  });
}

/** Version 1 names no roles: each is the one its path has, none for a path no backup holds. */
function listedFilesOfVersion1(files: unknown): Listed[] {
  const entries = isObject(files) ? Object.entries(files) : [];
  const unhashed = entries.find(([, sha256]) => !isSha256(sha256));
  if (entries.length === 0 || entries.length > MAX_FILES || unhashed !== undefined)
    throw new BackupRefused(
      `${MANIFEST} lists no SHA-256 for ${unhashed === undefined ? 'its files' : shown(unhashed[0])}: the backup was ` +
        'made by an older version; make a new one with hashproof backup',
    );
  return entries.map(([file, sha256]) => ({
    path: file,
    role: roleOf(file),
    sha256: sha256 as string,
  }));
}
