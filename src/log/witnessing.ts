import { randomUUID } from 'node:crypto';
import type { WitnessConfig } from '../config.ts';
import { parseCosignerKey, type Cosigner } from '../core/cosignature.ts';
import { BackgroundLoop } from '../platform/background-loop.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/log-options.ts';
import type { SignedCheckpoint } from './log-store.ts';
import { addCheckpointBody, conflictSize, cosignatureOf, refusal } from './witness-answers.ts';
import { WitnessAddress, WitnessClient, WitnessFailure } from './witness-http.ts';
import type { WitnessHealth, WitnessStore } from './witness-store.ts';

/** The lease of the one witnessing instance; another takes over this long after it stops renewing. */
const LEASE_MS = 30_000;
/** The worker looks at the log at least this often (and at once when this instance signs a tree). */
const POLL_MS = 1_000;
/** One request to a witness may take this long, answer included. */
const REQUEST_TIMEOUT_MS = 10_000;
/** The largest answer read from a witness (a cosignature line is about 150 bytes). */
const ANSWER_LIMIT = 64 * 1024;
/** A failing witness is asked again after 1 s, 2 s, 4 s … at most this long. */
const MAX_RETRY_MS = 5 * 60_000;
/** A step that failed (the database, most likely) is tried again after 1 s, 2 s … at most this long. */
const MAX_STEP_RETRY_MS = 30_000;

/** A configured witness: its key, where it answers, and how it is shown. */
export interface Witness {
  vkey: string;
  cosigner: Cosigner;
  address: WitnessAddress;
}

interface WitnessWorkerDeps {
  store: WitnessStore;
  config: WitnessConfig;
  /** The newest signed checkpoint of the log (of at least `atLeast` entries when the log has it). */
  latest: (atLeast?: number) => Promise<SignedCheckpoint | undefined>;
  /** The consistency proof between two tree sizes of the log. */
  consistency: (from: number, to: number) => Promise<Uint8Array[]>;
  clock: Clock;
  logger: Logger;
}

/** The witnesses of a configuration, their keys read (the configuration checked them). */
export function witnessesOf(config: WitnessConfig): Witness[] {
  return config.witnesses.map(({ vkey, url }) => ({
    vkey,
    cosigner: parseCosignerKey(vkey),
    address: new WitnessAddress(url),
  }));
}

/** A witness as /api/status shows it. */
export interface WitnessStatus {
  name: string;
  keyId: string;
  url: string;
  state: 'ok' | 'failing';
  consecutiveFailures: number;
  lastError: string | null;
  cosignedSize: number | null;
  lastSuccessAt: string | null;
}

/**
 * Asks the configured witnesses to cosign the log's checkpoints (C2SP tlog-witness): after each new
 * checkpoint, in rounds at most once per WITNESS_INTERVAL_MS (every witness is sent the round's
 * checkpoint), it sends `add-checkpoint` with the
 * consistency proof from the size the witness last cosigned, follows a 409 to the size the witness
 * holds, and stores each cosignature that verifies against the witness's key. One instance does it
 * (a lease in the database); each witness has at most one request open, and nothing here is on the
 * path of proofs: a witness that is down, slow or hostile only goes without new checkpoints.
 */
export class WitnessWorker {
  readonly #deps: WitnessWorkerDeps;
  readonly #holder = randomUUID();
  readonly #loop: BackgroundLoop;
  readonly #client: WitnessClient;
  readonly witnesses: Witness[];
  /** The request open to each witness, by verifier key. */
  readonly #open = new Map<string, Promise<void>>();
  /**
   * The checkpoint of the current round and when the round began: every witness is sent that one, so
   * that they cosign the same checkpoints (a quorum needs cosignatures of one checkpoint), a witness
   * still busy with an earlier one joining when it is free. A new round begins at most once per
   * WITNESS_INTERVAL_MS, when the log grew.
   */
  #round: { checkpoint: SignedCheckpoint; startedAt: number } | undefined;
  #stopping = new AbortController();

  constructor(deps: WitnessWorkerDeps) {
    this.#deps = deps;
    this.witnesses = witnessesOf(deps.config);
    this.#client = new WitnessClient(deps.config.allowPrivateUrls);
    this.#loop = new BackgroundLoop({
      name: 'witnesses',
      step: () => this.step(),
      logger: deps.logger,
      retry: { firstMs: POLL_MS, maxMs: MAX_STEP_RETRY_MS },
    });
  }

  get enabled(): boolean {
    return this.witnesses.length > 0;
  }

  start(): void {
    if (!this.enabled) return;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    this.#loop.start();
  }

  /** Ends the open requests, waits for them and the step under way, and gives up the lease. */
  async stop(): Promise<void> {
    if (!this.enabled) return;
    this.#stopping.abort();
    await this.#loop.stop();
    await Promise.all(this.#open.values());
    this.#client.close();
    await this.#deps.store.release(this.#holder).catch(() => undefined);
  }

  /** The log grew on this instance: look now rather than at the next poll. */
  nudge(): void {
    if (this.enabled) this.#loop.nudge();
  }

  /**
   * One step: with the lease, begins a new round when the log grew and the last round is at least
   * WITNESS_INTERVAL_MS old, and sends the round's checkpoint to each witness that has no cosignature
   * of it, no request open, and no retry pending after failures. Returns ms until the next step.
   */
  async step(): Promise<number> {
    const { store, clock, config, latest } = this.#deps;
    const now = clock.now();
    if (!(await store.lease(this.#holder, now, now + LEASE_MS))) return POLL_MS;
    const newest = await latest();
    // An empty tree has nothing to witness.
    if (newest === undefined || newest.treeSize === 0) return POLL_MS;
    let next = POLL_MS;
    const round = this.#round;
    if (
      round === undefined ||
      (newest.treeSize > round.checkpoint.treeSize && now >= round.startedAt + config.intervalMs)
    )
      this.#round = { checkpoint: newest, startedAt: now };
    else if (newest.treeSize > round.checkpoint.treeSize) next = round.startedAt + config.intervalMs - now;
    const { checkpoint } = this.#round!;
    const [health, cosigned] = await Promise.all([store.health(), store.at(checkpoint.treeSize)]);
    const healthOf = new Map(health.map((h) => [h.witness, h]));
    const have = new Set(cosigned.map((c) => c.witness));
    for (const witness of this.witnesses) {
      if (have.has(witness.vkey) || this.#open.has(witness.vkey)) continue;
      const h = healthOf.get(witness.vkey);
      const retryAt =
        h !== undefined && h.failures > 0 && h.lastFailureAt !== null
          ? h.lastFailureAt + Math.min(1_000 * 2 ** (h.failures - 1), MAX_RETRY_MS)
          : -Infinity;
      if (now < retryAt) {
        next = Math.min(next, retryAt - now);
        continue;
      }
      const request = this.#ask(witness, checkpoint, h).finally(() => {
        this.#open.delete(witness.vkey);
        // The witness is free again: look whether a newer checkpoint waits for it.
        if (!this.#stopping.signal.aborted) this.#loop.nudge();
      });
      this.#open.set(witness.vkey, request);
    }
    return Math.max(next, 1);
  }

  /** Sends one witness the checkpoint, following one 409; records what came of it. Never throws. */
  async #ask(witness: Witness, sent: SignedCheckpoint, health: WitnessHealth | undefined): Promise<void> {
    const { store, clock, logger } = this.#deps;
    let known = health?.cosignedSize ?? 0;
    let learned: number | undefined;
    let checkpoint = sent;
    const name = witness.cosigner.name;
    try {
      for (let attempt = 0; ; attempt++) {
        if (known > checkpoint.treeSize) {
          // Another instance may have signed a larger tree; if the log has none, the witness saw one
          // this log never had: a split view, or a database restored behind its log.
          const larger = await this.#deps.latest(known);
          if (larger === undefined || larger.treeSize < known)
            throw new WitnessFailure(
              `the witness has cosigned tree size ${known}, larger than the log's ${checkpoint.treeSize}`,
            );
          checkpoint = larger;
        }
        const proof =
          known === 0 || known === checkpoint.treeSize
            ? []
            : await this.#deps.consistency(known, checkpoint.treeSize);
        const answer = await this.#client.addCheckpoint(
          witness.address,
          addCheckpointBody(known, proof, checkpoint.checkpoint),
          { limit: ANSWER_LIMIT, timeoutMs: REQUEST_TIMEOUT_MS, signal: this.#stopping.signal },
        );
        if (answer.status === 409) {
          const size = conflictSize(answer);
          learned = size;
          if (size === known || attempt > 0)
            throw new WitnessFailure(
              size === known
                ? `the witness refuses the checkpoint (HTTP 409) at the size it holds, ${size}: it holds another tree of that size`
                : `the witness answered HTTP 409 twice (it now holds size ${size})`,
            );
          known = size;
          continue;
        }
        if (answer.status !== 200) throw refusal(answer);
        const text = checkpoint.checkpoint.slice(0, checkpoint.checkpoint.lastIndexOf('\n\n') + 1);
        const { line, timestamp } = cosignatureOf(answer, text, witness.cosigner, clock.now());
        await store.add(
          {
            treeSize: checkpoint.treeSize,
            witness: witness.vkey,
            rootHash: checkpoint.rootHash,
            line,
            cosignedAt: timestamp,
          },
          clock.now(),
        );
        await store.record(witness.vkey, clock.now(), { cosignedSize: checkpoint.treeSize });
        logger.debug({ witness: name, treeSize: checkpoint.treeSize }, 'witnesses: checkpoint cosigned');
        return;
      }
    } catch (error) {
      if (this.#stopping.signal.aborted) return;
      const reason =
        error instanceof WitnessFailure ? error.message : `could not ask: ${(error as Error).message}`;
      logger.warn(
        { witness: name, url: witness.address.shown, treeSize: checkpoint.treeSize },
        `witnesses: ${reason}`,
      );
      await store
        .record(witness.vkey, clock.now(), {
          error: reason,
          ...(learned === undefined ? {} : { cosignedSize: learned }),
        })
        .catch((err: unknown) =>
          logger.warn({ err, witness: name }, 'witnesses: the witness health was not recorded'),
        );
    }
  }

  /** Each configured witness as /api/status shows it, from the health recorded in the database. */
  async status(): Promise<WitnessStatus[]> {
    if (!this.enabled) return [];
    const health = new Map((await this.#deps.store.health()).map((h) => [h.witness, h]));
    return this.witnesses.map((witness) => {
      const h = health.get(witness.vkey);
      const failures = h?.failures ?? 0;
      return {
        name: witness.cosigner.name,
        keyId: witness.cosigner.keyId.toString('hex'),
        url: witness.address.shown,
        state: failures > 0 ? 'failing' : 'ok',
        consecutiveFailures: failures,
        lastError: failures > 0 ? (h?.lastError ?? null) : null,
        cosignedSize: h?.cosignedSize ?? null,
        lastSuccessAt: h?.lastSuccessAt == null ? null : new Date(h.lastSuccessAt).toISOString(),
      };
    });
  }
}
