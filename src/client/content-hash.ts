import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { isContentHash } from '../core/hashing.ts';

/** The content a proof speaks of, hashed on this machine (only its hash ever leaves it). */

/** `sha256:` + hex SHA-256 of a file, read as a stream (constant memory, whatever the size). */
export function hashFile(path: string, onProgress?: (bytes: number) => void): Promise<string> {
  return hashStream(createReadStream(path, { highWaterMark: 1 << 20 }), onProgress);
}

/** `sha256:` + hex SHA-256 of everything a stream yields; `onProgress` hears the bytes read so far. */
export async function hashStream(
  stream: AsyncIterable<unknown>,
  onProgress?: (bytes: number) => void,
): Promise<string> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
    onProgress?.(bytes);
  }
  return 'sha256:' + hash.digest('hex');
}

/**
 * The content a proof is checked against: `{ hash }` (a `sha256:` hash), `{ path }` (a file, hashed as
 * a stream), or a string, which is a hash when it is `sha256:` and 64 hex digits and a file path
 * otherwise (name a file that looks like a hash with `{ path }`).
 */
export type Content = string | { hash: string } | { path: string };

export async function contentHashOf(content: Content): Promise<string> {
  if (typeof content === 'string') return isContentHash(content) ? content : hashFile(content);
  return 'hash' in content ? content.hash : hashFile(content.path);
}
