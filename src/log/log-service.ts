import { BoundedMap } from '../core/bounded-map.ts';
import { integrate } from '../core/compact-range.ts';
import {
  consistencyPath,
  getterOf,
  inclusionPath,
  nodesNeeded,
  treeRoot,
  type NodeGetter,
} from '../core/merkle-tree.ts';
import { formatVerifierKey } from '../core/signed-note.ts';
import { AppError } from '../errors.ts';
import type { LogKey } from '../keys/keyring.ts';
import type { Logger } from '../platform/log-options.ts';
import type { LeafSource } from './leaf-source.ts';
import type { LogGuard, LogProblem } from './log-guard.ts';
import type { LogStore, SignedCheckpoint } from './log-store.ts';
import { formatTlogProof } from '../core/tlog-proof.ts';
import { TILE_HEIGHT, TILE_WIDTH } from '../core/tlog-tiles.ts';

export type { LeafSource } from './leaf-source.ts';
export type { SignedCheckpoint } from './log-store.ts';
export { isLogRecordName } from './log-state.ts';
/**
 * How long a checkpoint read from the store answers for the newest one. Within an instance the
 * sequencer hands over each checkpoint it signs at once; this only bounds how late a checkpoint signed
 * by another instance shows up. A request that needs a larger tree than the one remembered reads the
 * store at once.
 */
const LATEST_TTL_MS = 100;
/** SHA-256: every node of the tree is this long. */
const HASH_BYTES = 32;
/** Inclusion proofs kept, by leaf index and tree size (they never change). */
const INCLUSION_CACHE_SIZE = 10_000;

/** What the log's reads (`LogService`) and its one writer (`Sequencer`) are both given. */
export interface LogParts {
  store: LogStore;
  key: LogKey;
  /**
   * The log's name in checkpoints (e.g. `proofs.example.com/log`). `LogService` is given the configured
   * one, from the public host and path, which only the first start of a log stores: the name is then
   * kept, whatever later configurations say. The `Sequencer` is given the stored one (`open`), and signs
   * every checkpoint under it.
   */
  origin: string;
  logger: Logger;
}

interface LogServiceDeps extends LogParts {
  /** The log's entries, for entry bundles. */
  leaves: Pick<LeafSource, 'leaves' | 'backlog'>;
  /** Knows whether the log is consistent with the checkpoints it published (the sequencer's guard). */
  guard: Pick<LogGuard, 'problem'>;
  /**
   * Adds the witnesses' cosignature lines the log has of a checkpoint to its signed note
   * (cosigned-checkpoints.ts); without it, checkpoints are served as signed.
   */
  cosignatures?: {
    cosigned(note: string): Promise<string>;
    newestSize(quorum: number): Promise<number | undefined>;
  };
}

interface Inclusion {
  leafIndex: number;
  treeSize: number;
  rootHash: Buffer;
  hashes: Uint8Array[];
  /** The signed checkpoint of that tree size (null for a size the log never signed). */
  checkpoint: string | null;
}

/** An inclusion proof as JSON gives it: hashes in base64 (docs/verification.md, "The transparency log"). */
export function encodeInclusion(inclusion: Inclusion): {
  leafIndex: number;
  treeSize: number;
  rootHash: string;
  hashes: string[];
  checkpoint: string | null;
} {
  return {
    leafIndex: inclusion.leafIndex,
    treeSize: inclusion.treeSize,
    rootHash: inclusion.rootHash.toString('base64'),
    hashes: inclusion.hashes.map((hash) => Buffer.from(hash).toString('base64')),
    checkpoint: inclusion.checkpoint,
  };
}

/** The log's origin for a service at `publicBaseUrl` (its host and path, then `/log`): what a new log is named. */
export function logOrigin(publicBaseUrl: string): string {
  const url = new URL(publicBaseUrl);
  return `${url.host}${url.pathname.replace(/\/+$/, '')}/log`;
}

/**
 * The reads of the append-only Merkle log of all proofs: checkpoints, inclusion and consistency proofs,
 * tiles and entry bundles (C2SP tlog-tiles), computed from the stored subtree hashes with a few indexed
 * lookups each. The `Sequencer` writes the log and hands over each checkpoint it signs (`remember`).
 */
export class LogService {
  readonly #deps: LogServiceDeps;
  #origin: string;
  #vkey: string;
  #latest: { checkpoint: SignedCheckpoint; readAt: number } | undefined;
  readonly #inclusions = new BoundedMap<string, { packed: Uint8Array; root: Uint8Array }>(
    INCLUSION_CACHE_SIZE,
  );

  constructor(deps: LogServiceDeps) {
    this.#deps = deps;
    this.#origin = deps.origin;
    this.#vkey = formatVerifierKey(deps.origin, deps.key.publicKey);
  }

  /** Reads the log's stored name, storing the configured one when the log is new. */
  async open(): Promise<void> {
    const origin = (await this.#deps.store.claimOrigin(this.#deps.origin)) ?? this.#deps.origin;
    if (origin !== this.#deps.origin) {
      this.#deps.logger.warn(
        { storedOrigin: origin, configuredOrigin: this.#deps.origin },
        'the log keeps the name it was created with; PUBLIC_BASE_URL names another',
      );
    }
    this.#origin = origin;
    this.#vkey = formatVerifierKey(origin, this.#deps.key.publicKey);
  }

  get origin(): string {
    return this.#origin;
  }

  /** The C2SP verifier key of the log (`origin+keyid+base64`). */
  get verifierKey(): string {
    return this.#vkey;
  }

  /**
   * Why the log signs nothing and the service takes no new proofs (its database is not the tree it
   * published); undefined while all is well.
   */
  get problem(): LogProblem | undefined {
    return this.#deps.guard.problem;
  }

  /** A checkpoint just signed or read: answers for the newest unless a larger one is already known. */
  remember(checkpoint: SignedCheckpoint): void {
    if (this.#latest === undefined || checkpoint.treeSize >= this.#latest.checkpoint.treeSize) {
      this.#latest = { checkpoint, readAt: performance.now() };
    }
  }

  /**
   * The newest signed checkpoint, or undefined before the sequencer first ran. One read within the last
   * LATEST_TTL_MS is reused, unless the caller needs a tree of at least `atLeast` entries that it
   * does not cover.
   */
  async latest(atLeast = 0): Promise<SignedCheckpoint | undefined> {
    const known = this.#latest;
    if (
      known !== undefined &&
      known.checkpoint.treeSize >= atLeast &&
      performance.now() - known.readAt < LATEST_TTL_MS
    ) {
      return known.checkpoint;
    }
    const checkpoint = await this.#deps.store.latestCheckpoint();
    if (checkpoint !== undefined) this.remember(checkpoint);
    return checkpoint;
  }

  /** The newest checkpoint as served: its signed note with the witnesses' cosignatures the log has. */
  async served(): Promise<string | undefined> {
    const latest = await this.latest();
    return latest === undefined ? undefined : this.#cosigned(latest.checkpoint);
  }

  /**
   * The largest checkpoint that carries the cosignatures of at least `quorum` configured witnesses, as
   * served; undefined when there is none (or no witness is configured).
   */
  async newestCosigned(quorum = 1): Promise<string | undefined> {
    const size = await this.#deps.cosignatures?.newestSize(quorum);
    const note = size === undefined ? null : await this.#deps.store.checkpointAt(size);
    if (note === null) return undefined;
    const cosigned = await this.#cosigned(note);
    return cosigned === note ? undefined : cosigned;
  }

  #cosigned(note: string): Promise<string> {
    return this.#deps.cosignatures?.cosigned(note) ?? Promise.resolve(note);
  }

  async #treeSize(atLeast: number): Promise<number> {
    return (await this.latest(atLeast))?.treeSize ?? 0;
  }

  /**
   * Inclusion of leaf `leafIndex` in the tree of `treeSize` (the latest checkpoint when absent). Paths
   * never change, so they are kept in memory; `fromStore` reads the stored hashes regardless.
   */
  async inclusion(
    leafIndex: number,
    treeSize?: number,
    { fromStore = false }: { fromStore?: boolean } = {},
  ): Promise<Inclusion> {
    const latest = await this.latest(treeSize ?? leafIndex + 1);
    const current = latest?.treeSize ?? 0;
    const size = treeSize ?? current;
    if (size > current) throw badSize('treeSize', `is larger than the log (${current} entries)`);
    if (leafIndex >= size) throw badSize('treeSize', `must be larger than the leaf index ${leafIndex}`);
    const key = `${leafIndex}/${size}`;
    let path = fromStore ? undefined : this.#inclusions.get(key);
    if (path === undefined) {
      // The latest tree's root is signed in its checkpoint; only an older size needs it recomputed.
      const signedRoot = latest !== undefined && size === current ? latest.rootHash : undefined;
      const compute = (get: NodeGetter) => ({
        hashes: inclusionPath(leafIndex, size, get),
        root: signedRoot ?? treeRoot(size, get),
      });
      const computed = compute(getterOf(await this.#deps.store.nodes(nodesNeeded(compute))));
      // Kept as one array of their own: each hash read from the store is a view of an 8 KB pooled
      // buffer, which a kept view would keep alive whole (10,000 paths held 45 MB that way).
      const packed = new Uint8Array(HASH_BYTES * computed.hashes.length);
      computed.hashes.forEach((hash, i) => packed.set(hash, HASH_BYTES * i));
      path = { packed, root: computed.root };
      this.#inclusions.set(key, path);
    }
    const { packed, root } = path;
    const hashes = Array.from({ length: packed.length / HASH_BYTES }, (_, i) =>
      packed.subarray(HASH_BYTES * i, HASH_BYTES * (i + 1)),
    );
    const note = size === current && latest ? latest.checkpoint : await this.#deps.store.checkpointAt(size);
    return {
      leafIndex,
      treeSize: size,
      rootHash: Buffer.from(root),
      hashes,
      checkpoint: note === null ? null : await this.#cosigned(note),
    };
  }

  /** The proofs not integrated yet: how many, and when the oldest was made (ms). */
  backlog(): Promise<{ count: number; oldestCreatedAt: number | null }> {
    return this.#deps.leaves.backlog();
  }

  /** The consistency proof between two tree sizes (1 ≤ from ≤ to ≤ the log's size). */
  async consistency(from: number, to: number): Promise<Uint8Array[]> {
    const current = await this.#treeSize(to);
    if (from < 1) throw badSize('from', 'must be at least 1');
    if (to > current) throw badSize('to', `is larger than the log (${current} entries)`);
    if (from > to) throw badSize('from', 'must not be larger than to');
    const compute = (get: NodeGetter) => consistencyPath(from, to, get);
    return compute(getterOf(await this.#deps.store.nodes(nodesNeeded(compute))));
  }

  /** A tile of hashes (level L covers binary level 8L), `width` entries from the start; undefined when not there yet. */
  async tile(level: number, index: number, width: number): Promise<Buffer | undefined> {
    const span = 2 ** (TILE_HEIGHT * level);
    const current = await this.#treeSize((index * TILE_WIDTH + width) * span);
    if ((index * TILE_WIDTH + width) * span > current) return undefined;
    const hashes = await this.#deps.store.level(TILE_HEIGHT * level, index * TILE_WIDTH, width);
    if (hashes.length !== width) throw new Error(`log tile ${level}/${index} is incomplete in the store`);
    return Buffer.concat(hashes);
  }

  /** An entry bundle: each leaf as a big-endian uint16 length and its bytes. */
  async entries(index: number, width: number): Promise<Buffer | undefined> {
    const current = await this.#treeSize(index * TILE_WIDTH + width);
    if (index * TILE_WIDTH + width > current) return undefined;
    const leaves = await this.#deps.leaves.leaves(index * TILE_WIDTH, width);
    if (leaves.length !== width) throw new Error(`log entries ${index} are incomplete in the store`);
    return Buffer.concat(
      leaves.flatMap((leaf) => {
        const length = Buffer.alloc(2);
        length.writeUInt16BE(leaf.length);
        return [length, leaf];
      }),
    );
  }

  /** The C2SP tlog-proof file of a leaf against the latest checkpoint. */
  async tlogProof(leafIndex: number): Promise<string> {
    const inclusion = await this.inclusion(leafIndex);
    if (inclusion.checkpoint === null) throw new Error('the latest tree size has no checkpoint');
    return formatTlogProof({ leafIndex, hashes: inclusion.hashes, checkpoint: inclusion.checkpoint });
  }

  /** Recomputes the root of `size` from the stored leaf hashes alone (level 0), for audits and tests. */
  async recomputeRoot(size: number): Promise<Buffer> {
    const leaves = await this.#deps.store.level(0, 0, size);
    if (leaves.length !== size) throw new Error('leaf hashes are missing');
    // Every level rebuilt from the leaves, as the sequencer integrates them; no interior node is read.
    return Buffer.from((await integrate(0, leaves, () => [])).root);
  }
}

function badSize(parameter: string, message: string): AppError {
  return new AppError('invalid_request', `Invalid request: ${parameter} ${message}`, {
    errors: [{ location: 'querystring', path: `/${parameter}`, message, keyword: 'treeSize' }],
  });
}
