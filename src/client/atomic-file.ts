import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Replaces `file` with `text` atomically: a temporary file beside it, flushed, renamed over the old one,
 * and the directory flushed so that the rename survives a crash. A reader sees the old file or the new
 * one, never a part of either. `mode` applies to a new file (0600 for what the command remembers).
 *
 * The one atomic write of the code base: the client's memories use it, and so does the service's record
 * of the log's latest checkpoint (log/log-state.ts; docs/decisions.md). The temporary file is hidden,
 * `.<name>.<random>.tmp`, so a writer that died before its rename leaves a file that can be recognised
 * and removed.
 */
export async function writeFileAtomic(file: string, text: string, mode = 0o600): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const handle = await open(temp, 'wx', mode);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  const directory = await open(path.dirname(file), 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
