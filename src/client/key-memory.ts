import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from './atomic-file.ts';
import type { ManifestKey } from './offline.ts';

/**
 * The key manifests a client trusts, one per service origin, remembered at its first online contact
 * with that service (trust on first use, as ssh's known_hosts): a proof file is then checked offline
 * with these keys, never with keys the file carries (docs/verification.md, "Trusted keys"). A manifest
 * served later may add keys; one that drops a remembered key, or gives a remembered key id other key
 * material, is refused and never replaces the remembered one.
 */

/** A served manifest that contradicts the remembered one: the message starts `key manifest changed:`. */
export class KeyManifestChangedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyManifestChangedError';
  }
}

interface StoredManifest {
  origin: string;
  keys: ManifestKey[];
}

/** What must never change for a key id once remembered. */
const IDENTITY = ['publicKey', 'use', 'algorithm', 'verifierKey', 'validFrom'] as const;

/** The origin (`scheme://host[:port]`) a service is remembered under. */
export function originOf(serviceUrl: string): string {
  return new URL(serviceUrl).origin;
}

export class KeyMemory {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The manifest remembered for a service origin, or undefined when none was saved. */
  async recall(origin: string): Promise<ManifestKey[] | undefined> {
    const file = this.#file(origin);
    let stored: StoredManifest;
    try {
      stored = JSON.parse(await readFile(file, 'utf8')) as StoredManifest;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`${file}: not a remembered key manifest (${(error as Error).message})`);
    }
    if (stored.origin !== origin || !Array.isArray(stored.keys))
      throw new Error(`${file}: remembers the keys of another service than ${origin}`);
    return stored.keys;
  }

  /**
   * Checks a manifest the service served against the one remembered for its origin and remembers the
   * union: every remembered key must be served again with the same key material (a rotation may set a
   * `validUntil` that was null). Returns the keys to trust; throws `KeyManifestChangedError` otherwise.
   */
  async accept(origin: string, served: readonly ManifestKey[]): Promise<ManifestKey[]> {
    const remembered = await this.recall(origin);
    if (remembered === undefined) {
      const keys = served.map(keyFields);
      await this.#save(origin, keys);
      return keys;
    }
    const merged: ManifestKey[] = [];
    for (const known of remembered) {
      const now = served.find((key) => key.keyId === known.keyId);
      if (now === undefined)
        throw new KeyManifestChangedError(
          `key manifest changed: ${origin} no longer lists the ${known.use ?? ''} key ${known.keyId} remembered in ${this.#file(origin)}; the remembered keys are kept`,
        );
      const changed = IDENTITY.filter((field) => (now[field] ?? null) !== (known[field] ?? null));
      if (known.validUntil !== null && now.validUntil !== known.validUntil)
        changed.push('validUntil' as never);
      if (changed.length > 0)
        throw new KeyManifestChangedError(
          `key manifest changed: ${origin} gives the remembered key ${known.keyId} another ${changed.join(', ')} than the one remembered in ${this.#file(origin)}; the remembered keys are kept`,
        );
      merged.push(keyFields({ ...known, validUntil: now.validUntil }));
    }
    const added = served.filter((key) => !remembered.some((known) => known.keyId === key.keyId));
    merged.push(...added.map(keyFields));
    if (added.length > 0 || merged.some((key, i) => key.validUntil !== remembered[i]?.validUntil))
      await this.#save(origin, merged);
    return merged;
  }

  async #save(origin: string, keys: ManifestKey[]): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const stored: StoredManifest = { origin, keys };
    await writeFileAtomic(this.#file(origin), JSON.stringify(stored, null, 2) + '\n');
  }

  #file(origin: string): string {
    return path.join(this.dir, `keys-${createHash('sha256').update(origin).digest('hex').slice(0, 16)}.json`);
  }
}

/** The fields of a manifest key that matter for trust, and nothing else a server may have added. */
function keyFields(key: ManifestKey): ManifestKey {
  return {
    keyId: String(key.keyId),
    algorithm: String(key.algorithm),
    publicKey: String(key.publicKey),
    validFrom: String(key.validFrom),
    validUntil: key.validUntil === null ? null : String(key.validUntil),
    ...(key.use === undefined ? {} : { use: String(key.use) }),
    ...(key.verifierKey === undefined ? {} : { verifierKey: String(key.verifierKey) }),
    // The same key as PEM, for readers with openssl (the checks read `publicKey`).
    ...(typeof key.publicKeyPem === 'string' ? { publicKeyPem: key.publicKeyPem } : {}),
  };
}
