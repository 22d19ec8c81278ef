import { readFile } from 'node:fs/promises';
import {
  defaultStateDir,
  HashproofError,
  KeyMemory,
  manifestKeysOf,
  originOf,
  type HashproofClient,
  type ManifestKey,
} from '../../client/client.ts';
import { NotVerifiedError, UsageError } from '../output.ts';

/**
 * The keys a command trusts (docs/verification.md, "Trusted keys"): a manifest pinned with --keys, else
 * the service's, checked against the one remembered for its origin in HASHPROOF_STATE_DIR (saved at the
 * first online contact), else, offline, the remembered one. Keys a proof file carries are never trusted.
 */

/** Where the trusted keys came from, for the `keys` line of `verify`. */
export interface TrustedKeys {
  keys: ManifestKey[];
  source: string;
}

/** The largest key manifest read, from a file or a service: a manifest is a few kilobytes. */
const MAX_MANIFEST_BYTES = 1 << 20;

/** A saved key manifest named on the command line (`--keys`); a missing or malformed one is a usage error. */
export async function pinnedKeys(file: string): Promise<TrustedKeys> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? `--keys ${file}: no such file (save the service's /.well-known/hashproof-keys.json there)`
        : `--keys ${file}: cannot be read`,
    );
  }
  let keys: ManifestKey[] | string;
  try {
    keys = text.length > MAX_MANIFEST_BYTES ? 'too large to be one' : manifestKeysOf(JSON.parse(text));
  } catch {
    keys = 'not JSON';
  }
  if (typeof keys === 'string')
    throw new UsageError(
      `--keys ${file}: not a key manifest (a saved /.well-known/hashproof-keys.json): ${keys}`,
    );
  return { keys, source: `pinned by --keys ${file}` };
}

/**
 * The service's manifest, checked against the one remembered for its origin and remembered with any
 * new keys: `key manifest changed: …` (exit 1) when it drops or alters a remembered key.
 */
export async function onlineKeys(client: HashproofClient): Promise<TrustedKeys> {
  const served = manifestKeysOf(await client.keys());
  if (typeof served === 'string')
    throw new HashproofError(
      0,
      'malformed_answer',
      `${client.baseUrl} served a key manifest that is ${served}`,
    );
  const origin = originOf(client.baseUrl);
  const keys = await new KeyMemory(defaultStateDir()).accept(origin, served);
  return { keys, source: `served by ${origin} and consistent with the keys remembered for it` };
}

/** The manifest remembered for a service's origin; `not verified: no trusted keys …` without one. */
export async function rememberedKeys(serviceUrl: string): Promise<TrustedKeys> {
  const origin = originOf(serviceUrl);
  const memory = new KeyMemory(defaultStateDir());
  const keys = await memory.recall(origin);
  if (keys === undefined || keys.length === 0)
    throw new NotVerifiedError(
      `not verified: no trusted keys for ${origin} (run hashproof verify --online once, or pass --keys <manifest>)`,
    );
  return { keys, source: `remembered for ${origin} in ${memory.dir}` };
}

const served = new WeakMap<HashproofClient, Promise<ManifestKey[]>>();

/**
 * The service's keys, checked against (and remembered as) the keys trusted for it: fetched once a
 * command, and again after a failure (`monitor` looks again after an outage).
 */
export function servedKeys(client: HashproofClient): Promise<ManifestKey[]> {
  let keys = served.get(client);
  if (keys === undefined) {
    keys = onlineKeys(client).then((trusted) => trusted.keys);
    keys.catch(() => served.delete(client));
    served.set(client, keys);
  }
  return keys;
}
