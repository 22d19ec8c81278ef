import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import {
  BackupRefused,
  MANIFEST,
  MANIFEST_MAX_BYTES,
  parseManifest,
  shown,
  type ListedFile,
  type Manifest,
} from './backup-manifest.ts';
import { UsageError } from '../output.ts';

/**
 * Reading and copying the files of a backup folder: every read of a listed file goes through
 * `openListed`, which holds it to the path rule of docs/operations.md ("What restore checks and
 * refuses"); every copy is hashed as it is made.
 */

export interface Digest {
  sha256: string;
  sizeBytes: number;
}

/** Reads `from` whole, hashing it and, when given, copying it to `to` as it goes (bounded memory). */
export async function digestOf(from: FileHandle, to?: FileHandle): Promise<Digest> {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(1024 * 1024);
  let sizeBytes = 0;
  for (;;) {
    const { bytesRead } = await from.read(buffer, 0, buffer.length, sizeBytes);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    if (to !== undefined)
      for (let written = 0; written < bytesRead;)
        written += (await to.write(buffer, written, bytesRead - written)).bytesWritten;
    sizeBytes += bytesRead;
  }
  // A copy keeps its modification time: the log key's is the time it was made (its validFrom).
  const { atimeMs, mtimeMs } = await from.stat();
  await to?.utimes(atimeMs / 1000, mtimeMs / 1000);
  return { sha256: hash.digest('hex'), sizeBytes };
}

/** Runs `use` on `file` opened for reading (or as `flags` say; a file it creates is 0600), and closes it. */
export async function withFile<T>(
  file: string,
  use: (handle: FileHandle) => Promise<T>,
  flags = 'r',
): Promise<T> {
  const handle = await open(file, flags, 0o600);
  try {
    return await use(handle);
  } finally {
    await handle.close();
  }
}

export const exists = (file: string): Promise<boolean> =>
  lstat(file).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );

export async function readManifest(folder: string): Promise<Manifest> {
  if (!(await exists(path.join(folder, MANIFEST))))
    throw new UsageError(`--from ${folder}: not a backup (no ${MANIFEST})`);
  const handle = await openListed(folder, MANIFEST);
  try {
    if ((await handle.stat()).size > MANIFEST_MAX_BYTES)
      throw new BackupRefused(`${MANIFEST} is larger than ${MANIFEST_MAX_BYTES} bytes`);
    return parseManifest(await handle.readFile('utf8'));
  } finally {
    await handle.close();
  }
}

/**
 * Opens the listed file `file` of `folder` for reading: every directory on its way a directory, the file
 * a regular file, none of them a symbolic link (`lstat` on each part; the file itself opened with
 * O_NOFOLLOW and checked to be the one looked at).
 */
export async function openListed(folder: string, file: string): Promise<FileHandle> {
  const parts = file.split('/');
  let at = folder;
  let seen;
  for (const [i, part] of parts.entries()) {
    at = path.join(at, part);
    const shownPart = shown(parts.slice(0, i + 1).join('/'));
    seen = await lstat(at).catch(() => {
      throw new BackupRefused(`${shownPart} is missing from the backup folder`);
    });
    if (seen.isSymbolicLink()) throw new BackupRefused(`${shownPart} is a symbolic link`);
    const isLast = i === parts.length - 1;
    if (isLast ? !seen.isFile() : !seen.isDirectory())
      throw new BackupRefused(`${shownPart} is not a ${isLast ? 'regular file' : 'directory'}`);
  }
  const handle = await open(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (error: NodeJS.ErrnoException) => {
      throw new BackupRefused(`${shown(file)} cannot be opened (${error.code})`);
    },
  );
  const opened = await handle.stat();
  if (!opened.isFile() || opened.ino !== seen?.ino || opened.dev !== seen.dev) {
    await handle.close();
    throw new BackupRefused(`${shown(file)} changed while it was read`);
  }
  return handle;
}

/** Reads a listed file (into `into`, when given), refusing it unless its size and SHA-256 are listed. */
export async function readListed(folder: string, file: ListedFile, into?: FileHandle): Promise<void> {
  const handle = await openListed(folder, file.path);
  try {
    if (file.sizeBytes !== undefined && (await handle.stat()).size !== file.sizeBytes)
      throw new BackupRefused(`${shown(file.path)} is not of the size ${MANIFEST} lists`);
    const digest = await digestOf(handle, into);
    if (digest.sha256 !== file.sha256)
      throw new BackupRefused(`${shown(file.path)} does not have the SHA-256 ${MANIFEST} lists`);
    await into?.sync();
  } finally {
    await handle.close();
  }
}

/** The files of the folder that its manifest does not list (links are not followed; at most 10,000 looked at). */
export async function unlistedIn(folder: string, listed: Set<string>): Promise<string[]> {
  const found: string[] = [];
  let looked = 0;
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (++looked > 10_000) return;
      const file = prefix + entry.name;
      if (entry.isDirectory()) await walk(path.join(dir, entry.name), `${file}/`);
      else if (!listed.has(file) && file !== MANIFEST) found.push(file);
    }
  };
  await walk(folder, '');
  return found;
}
