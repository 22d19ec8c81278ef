import { leafHash, verifyInclusion } from '../core/merkle.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { formatTlogProof } from '../core/tlog-proof.ts';
import { openCheckpoint, type LogCheckpoint } from '../verify/log-checkpoints.ts';
import { HashproofError } from './answers.ts';
import type { BatchItem, BatchResult, NotarizeInput, NotarizeResult, Proof } from './documents.ts';
import { LogCheckError, LogUncheckedError, type ConsistencyProver } from './log-memory.ts';
import { logKeyOf, type Evidence, type ManifestKey } from './offline.ts';
import { TileLog } from './stamp-many-log.ts';
import type { RateBudget } from './stamp-many-pacing.ts';

/** What stamping many files asks of a client (createClient's answer has it). */
export interface StampingClient {
  readonly rateLimit: RateBudget;
  keys: () => Promise<{ keys: ManifestKey[] }>;
  batch: (items: NotarizeInput[]) => Promise<BatchResult>;
  notarize: (input: NotarizeInput) => Promise<NotarizeResult>;
  timestampToken: (proofId: string) => Promise<Buffer>;
  tsaCertificates: () => Promise<string>;
  tile: (level: number | 'entries', index: number, width: number) => Promise<Buffer>;
  checkpoint: () => Promise<string>;
  itemsPerPayment: () => Promise<number | undefined>;
}

/** What one proof of many is made of: as `notarize` takes it (the idempotency key makes a re-run safe). */
export type StampManyInput = NotarizeInput;

/** The most items one batch takes (docs/api.md). */
export const BATCH_MAX_ITEMS = 1000;
/** The most bytes a batch's body may hold (docs/api.md), and what its body holds besides the items. */
const BATCH_MAX_BYTES = 2 * 2 ** 20;
const BATCH_BODY_OVERHEAD = '{"items":[]}'.length;
/** A batch counts one request against the rate limit for every 100 items begun. */
const ITEMS_PER_REQUEST = 100;
/** How long to keep waiting for proofs to join the log while none joins (default of `integrationWaitMs`). */
const INTEGRATION_WAIT_MS = 30_000;

/** A proof of many, with its offline evidence, as soon as that evidence is complete. */
export interface StampedProof {
  /** The position of its input in `inputs`. */
  index: number;
  idempotentReplay: boolean;
  /** The proof, its place in the log (`log`) filled in once it is there; the token is in `evidence`. */
  proof: Proof;
  links: NotarizeResult['links'];
  /** The RFC 3161 token with the TSA chain and, once the proof is in the log, its tlog-proof. */
  evidence: Evidence;
}

export interface StampManyOptions {
  /** Hears each proof as soon as its evidence is complete (or at the end, when the log kept it waiting). */
  onStamped: (stamped: StampedProof) => void | Promise<void>;
  /** Hears an item the service refused (that item alone: the others are made). */
  onRefused?: (index: number, error: HashproofError) => void | Promise<void>;
  /** Hears the inputs of each batch as it is sent. */
  onSending?: (indexes: readonly number[]) => void;
  /**
   * Hears each checkpoint of the log before any proof leading to it is handed on, with a prover of
   * consistency that reads the log's tiles (no request per proof): where a caller checks the log against
   * the checkpoints it remembers (`LogMemory.observe`).
   */
  onCheckpoint?: (note: string, prove: ConsistencyProver) => Promise<void>;
  /** The service's key manifest, when the caller has it already; fetched once otherwise. */
  keys?: readonly ManifestKey[];
  /** Items a batch (at most 1,000, and at most what one window of the rate limit allows). */
  batchSize?: number;
  /** How long to keep waiting for proofs to join the log while none joins (default 30 s). */
  integrationWaitMs?: number;
}

export interface StampManyResult {
  stamped: number;
  refused: number;
  /** Proofs handed on without a tlog-proof: the log did not take them in within the wait. */
  notIntegrated: number;
}

/**
 * Makes many proofs in batches (`POST /api/proof/batch`) and gets each one's offline evidence without a
 * request per proof (docs/cli.md, "Many files"): the RFC 3161 token comes inline with the batch, the TSA
 * chain and the key manifest once, the checkpoint once and again while proofs wait to join the log, and
 * each proof's place and inclusion proof from the log's tiles, checked against the signed checkpoint
 * with the manifest's log key before the proof is handed on. Every request is paced by the service's
 * RateLimit fields, so the limit is waited for rather than met; a 429 that comes anyway is waited out
 * and the batch sent again (its idempotency keys make that safe).
 */
export async function stampMany(
  client: StampingClient,
  inputs: readonly StampManyInput[],
  options: StampManyOptions,
): Promise<StampManyResult> {
  const result: StampManyResult = { stamped: 0, refused: 0, notIntegrated: 0 };
  const paced = async <T>(cost: number, request: () => Promise<T>): Promise<T> => {
    await client.rateLimit.pace(cost);
    return request();
  };
  const keys = options.keys ?? (await paced(1, client.keys)).keys;
  const logKey = logKeyOf(keys);
  const log =
    logKey === undefined ? undefined : await LogFollower.start(client, logKey, paced, options.onCheckpoint);
  const evidenceOf = tokenEvidence(client, paced);
  const handOn = async (stamped: StampedProof) => {
    if (stamped.evidence.tlogProof === undefined && log !== undefined) result.notIntegrated += 1;
    result.stamped += 1;
    await options.onStamped(stamped);
  };
  const batches = new BatchSender(client, paced);

  // Paid batches: at most what one payment may carry.
  const perPayment = await client.itemsPerPayment();
  for (let first = 0; first < inputs.length;) {
    const wanted = Math.min(options.batchSize ?? BATCH_MAX_ITEMS, perPayment ?? BATCH_MAX_ITEMS);
    const end = batchEnd(inputs, first, batchSize(wanted, client.rateLimit.state?.quota));
    const indexes = Array.from({ length: end - first }, (_, i) => first + i);
    first = end;
    options.onSending?.(indexes);
    const items = await batches.send(indexes.map((i) => inputs[i]!));
    for (const [at, item] of items.entries()) {
      const index = indexes[at]!;
      if (!item.ok) {
        result.refused += 1;
        const { code, message, details = {} } = item.error;
        await options.onRefused?.(index, new HashproofError(422, code, message, details));
        continue;
      }
      const { proof, evidence } = await evidenceOf(item.proof, item.evidence?.timestampToken);
      const stamped = { index, idempotentReplay: item.idempotentReplay, proof, links: item.links, evidence };
      if (log === undefined) await handOn(stamped);
      else log.add(stamped);
    }
    // The proofs of the batches before are likely in the log by now: handed on before the next is sent.
    if (log !== undefined) for (const stamped of await log.advance()) await handOn(stamped);
  }
  if (log !== undefined) {
    for (const stamped of await log.waitForAll(options.integrationWaitMs ?? INTEGRATION_WAIT_MS))
      await handOn(stamped);
  }
  return result;
}

/** Items a batch: the most the service takes, within one window of its rate limit when that is known. */
function batchSize(wanted: number | undefined, quota: number | undefined): number {
  const allowed = quota === undefined || quota < 1 ? BATCH_MAX_ITEMS : quota * ITEMS_PER_REQUEST;
  return Math.max(1, Math.min(wanted ?? BATCH_MAX_ITEMS, BATCH_MAX_ITEMS, allowed));
}

/**
 * Where the batch starting at `first` ends: after `size` inputs, or before the one that would take its
 * body over the 2 MiB a batch may hold (long labels and metadata), whichever comes first.
 */
function batchEnd(inputs: readonly StampManyInput[], first: number, size: number): number {
  let bytes = BATCH_BODY_OVERHEAD;
  let end = first;
  while (end < inputs.length && end - first < size) {
    bytes += Buffer.byteLength(JSON.stringify(inputs[end])) + 1;
    if (bytes > BATCH_MAX_BYTES && end > first) break;
    end += 1;
  }
  return end;
}

type Paced = <T>(cost: number, request: () => Promise<T>) => Promise<T>;

/**
 * Sends batches; against a service from before batches (404 on the batch path) it falls back to one
 * notarize per item, once found out for the rest of the run.
 */
class BatchSender {
  readonly #client: StampingClient;
  readonly #paced: Paced;
  #hasBatches = true;

  constructor(client: StampingClient, paced: Paced) {
    this.#client = client;
    this.#paced = paced;
  }

  async send(inputs: NotarizeInput[]): Promise<BatchItem[]> {
    if (this.#hasBatches) {
      try {
        const cost = Math.ceil(inputs.length / ITEMS_PER_REQUEST);
        return (await this.#paced(cost, () => this.#client.batch(inputs))).items;
      } catch (error) {
        if (!(error instanceof HashproofError && error.status === 404 && error.code === 'not_found'))
          throw error;
        this.#hasBatches = false;
      }
    }
    const items: BatchItem[] = [];
    for (const input of inputs) items.push(await this.#one(input));
    return items;
  }

  /** One notarize, answered as a batch item: a refusal of that input alone is its item's error. */
  async #one(input: NotarizeInput): Promise<BatchItem> {
    try {
      const { idempotentReplay, proof, links } = await this.#paced(1, () => this.#client.notarize(input));
      return { ok: true, idempotentReplay, proof, links };
    } catch (error) {
      const isRefusal = error instanceof HashproofError && [400, 409, 413, 422].includes(error.status);
      if (!isRefusal) throw error;
      return { ok: false, error: { code: error.code, message: error.message, details: error.details } };
    }
  }
}

/**
 * The token evidence of a proof: the RFC 3161 token inline in the batch's answer (base64), or, from a
 * service that answered one notarize at a time, read from the proof's token path; the TSA chain read
 * once a run. A proof without a token (`timestampToken` null) has no token evidence.
 */
function tokenEvidence(client: StampingClient, paced: Paced) {
  let certificates: Promise<string> | undefined;
  return async (
    proof: Proof,
    inline: string | null | undefined,
  ): Promise<{ proof: Proof; evidence: Evidence }> => {
    if (typeof proof.timestampToken !== 'string' && typeof inline !== 'string')
      return { proof, evidence: {} };
    const timestampToken =
      typeof inline === 'string'
        ? inline
        : (await paced(1, () => client.timestampToken(proof.id))).toString('base64');
    certificates ??= paced(1, client.tsaCertificates);
    return { proof, evidence: { timestampToken, tsaCertificates: await certificates } };
  };
}

/** A proof waiting to join the log: its leaf (the signing message) and, once known, its place. */
interface Waiting {
  stamped: StampedProof;
  leaf: Buffer;
  leafIndex: number | undefined;
}

/**
 * Follows the log while proofs join it: reads the checkpoint, the entry bundles past the size seen
 * before the first batch (to find each new proof's leaf index), and the hash tiles of the inclusion
 * proofs, each once. A proof the service already placed (an idempotent replay) says where it is.
 */
class LogFollower {
  readonly #client: StampingClient;
  readonly #logKey: string;
  readonly #paced: Paced;
  readonly #onCheckpoint: StampManyOptions['onCheckpoint'];
  readonly #tiles: TileLog;
  #checkpoint: LogCheckpoint | undefined;
  /** Entries before this are read (or were in the log before the first batch). */
  #scanned = 0;
  /** Proofs not in the log yet, by their leaf (its UTF-8 text). */
  readonly #waiting = new Map<string, Waiting>();

  private constructor(
    client: StampingClient,
    logKey: string,
    paced: Paced,
    onCheckpoint: StampManyOptions['onCheckpoint'],
  ) {
    this.#client = client;
    this.#logKey = logKey;
    this.#paced = paced;
    this.#onCheckpoint = onCheckpoint;
    this.#tiles = new TileLog((level, index, width) => paced(1, () => client.tile(level, index, width)));
  }

  /** Reads the checkpoint before the first batch: the new proofs' entries all come after it. */
  static async start(
    client: StampingClient,
    logKey: string,
    paced: Paced,
    onCheckpoint: StampManyOptions['onCheckpoint'],
  ): Promise<LogFollower> {
    const follower = new LogFollower(client, logKey, paced, onCheckpoint);
    await follower.#read();
    follower.#scanned = follower.#checkpoint?.size ?? 0;
    return follower;
  }

  add(stamped: StampedProof): void {
    const leaf = Buffer.from(signingMessage(stamped.proof), 'utf8');
    this.#waiting.set(leaf.toString('utf8'), { stamped, leaf, leafIndex: stamped.proof.log?.leafIndex });
  }

  /** Reads the checkpoint again: the proofs that are in its tree now, with their tlog-proofs. */
  async advance(): Promise<StampedProof[]> {
    if (this.#waiting.size === 0) return [];
    await this.#read();
    const checkpoint = this.#checkpoint;
    if (checkpoint === undefined) return [];
    await this.#findPlaces(checkpoint.size);
    const placed = [...this.#waiting.values()].filter(
      (w) => w.leafIndex !== undefined && w.leafIndex < checkpoint.size,
    );
    if (placed.length === 0) return [];
    const hashes = await this.#tiles.inclusionProofs(
      placed.map((w) => w.leafIndex!),
      checkpoint.size,
    );
    return placed.map((waiting, i) => this.#included(waiting, hashes[i]!, checkpoint));
  }

  /**
   * Reads the checkpoint, less and less often, until every proof is in the log or none has joined it
   * for `patienceMs`; the proofs still out are handed on without a tlog-proof.
   */
  async waitForAll(patienceMs: number): Promise<StampedProof[]> {
    const done: StampedProof[] = [];
    let deadline = Date.now() + patienceMs;
    for (let attempt = 1; this.#waiting.size > 0 && Date.now() < deadline; attempt++) {
      await sleep(Math.min(250 * attempt, 2_000));
      const joined = await this.advance();
      if (joined.length > 0) deadline = Date.now() + patienceMs;
      done.push(...joined);
    }
    done.push(...[...this.#waiting.values()].map((w) => w.stamped));
    this.#waiting.clear();
    return done;
  }

  /** The checkpoint now, opened with the log key; heard by `onCheckpoint` when it is new. */
  async #read(): Promise<void> {
    let note: string;
    try {
      note = await this.#paced(1, this.#client.checkpoint);
    } catch (error) {
      // A log with no checkpoint yet: every entry is still to come.
      if (error instanceof HashproofError && error.status === 404) return;
      throw error;
    }
    if (note === this.#checkpoint?.note) return;
    let checkpoint: LogCheckpoint;
    try {
      checkpoint = openCheckpoint(note, this.#logKey);
    } catch (error) {
      throw new LogCheckError(
        'checkpoint',
        `the log's checkpoint does not verify: ${(error as Error).message}`,
      );
    }
    if (this.#checkpoint !== undefined && checkpoint.size < this.#checkpoint.size) return;
    // A consistency proof built from tiles that hash up to the signed root is the log's own: one that
    // then fails is a fork, and tiles that do not are the log's fault, not a fork (nor unchecked).
    const prove: ConsistencyProver = async (from, to) => {
      if (to === checkpoint.size) await this.#assertTilesMatch(checkpoint);
      return this.#tiles.consistencyProof(from, to);
    };
    try {
      await this.#onCheckpoint?.(note, prove);
    } catch (error) {
      if (error instanceof LogUncheckedError && error.cause instanceof LogCheckError) throw error.cause;
      throw error;
    }
    this.#checkpoint = checkpoint;
  }

  async #assertTilesMatch(checkpoint: LogCheckpoint): Promise<void> {
    const root = Buffer.from(await this.#tiles.root(checkpoint.size));
    if (!root.equals(checkpoint.rootHash))
      throw new LogCheckError(
        'tiles',
        `log tiles do not match the checkpoint: ${checkpoint.origin} at size ${checkpoint.size}: the tree of its hash tiles has root ${root.toString('base64')}`,
      );
  }

  /** Reads the entries up to `size` once each: the leaf index of each waiting proof found there. */
  async #findPlaces(size: number): Promise<void> {
    const unplaced = [...this.#waiting.values()].some((w) => w.leafIndex === undefined);
    if (!unplaced || this.#scanned >= size) return;
    await this.#tiles.entries(this.#scanned, size, size, (index, entry) => {
      const waiting = this.#waiting.get(entry.toString('utf8'));
      if (waiting !== undefined && waiting.leafIndex === undefined) waiting.leafIndex = index;
    });
    this.#scanned = size;
  }

  /** The proof with its place and its tlog-proof, which must lead to the signed checkpoint. */
  #included(waiting: Waiting, hashes: Uint8Array[], checkpoint: LogCheckpoint): StampedProof {
    const leafIndex = waiting.leafIndex!;
    const { stamped } = waiting;
    if (!verifyInclusion(leafIndex, checkpoint.size, leafHash(waiting.leaf), hashes, checkpoint.rootHash))
      throw new LogCheckError(
        'tiles',
        `log tiles do not match the checkpoint: ${checkpoint.origin} at size ${checkpoint.size}: they do not prove proof ${stamped.proof.id} at entry ${leafIndex}`,
      );
    this.#waiting.delete(waiting.leaf.toString('utf8'));
    return {
      ...stamped,
      proof: { ...stamped.proof, log: { origin: checkpoint.origin, leafIndex } },
      evidence: {
        ...stamped.evidence,
        tlogProof: formatTlogProof({ leafIndex, hashes, checkpoint: checkpoint.note }),
        logVerifierKey: this.#logKey,
      },
    };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
