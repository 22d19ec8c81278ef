import { randomUUID } from 'node:crypto';
import type { AnchorConfig } from '../config.ts';
import { attestationsOf, readTimestamp } from '../core/opentimestamps.ts';
import type { SignedCheckpoint } from '../log/log-service.ts';
import { BackgroundLoop } from '../platform/background-loop.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/log-options.ts';
import { checkBitcoinHeader } from '../verify/bitcoin-header.ts';
import {
  AnchorFailure,
  fetchBitcoinHeader,
  fetchUpgrade,
  pendingCommitments,
  requestToken,
  submitDigest,
  type Outside,
} from './anchor-clients.ts';
import { assembleCalendars } from './anchor-ots.ts';
import type { AnchorStore, DueUpgrade, EndpointHealth, StoredAnchor } from './anchor-store.ts';
import { Endpoint, OutsideClient } from './outside-http.ts';

/** The lease of the one anchoring instance; another takes over this long after it stops renewing. */
const LEASE_MS = 30_000;
/** The worker looks at the log at least this often (and at once when this instance signs a tree). */
const POLL_MS = 1_000;
/** A failing authority or calendar is tried again after 1 s, 2 s, 4 s … at most this long. */
const MAX_RETRY_MS = 10 * 60_000;
/** Upgrades are asked for after one interval, then twice as long each time, at most this long apart… */
const MAX_UPGRADE_WAIT_MS = 6 * 3_600_000;
/** …for this long after submission (Bitcoin confirms a calendar's commitment within hours). */
const UPGRADE_FOR_MS = 7 * 86_400_000;
/** A step that failed (the database, most likely) is tried again after 1 s, 2 s, 4 s … at most this long. */
const MAX_STEP_RETRY_MS = 30_000;
const UPGRADES_PER_STEP = 20;
/** One pass (anchoring a checkpoint, or upgrading) makes at most this many requests… */
export const PASS_REQUESTS = 32;
/** …at most this many at once… */
export const PASS_PARALLEL = 4;
/** …and ends within this long, whatever is still open. */
export const PASS_MS = 30_000;
/** A Bitcoin block that holds a checkpoint cannot be dated more than this before it was signed. */
const BLOCK_TIME_SLACK_MS = 2 * 3_600_000;

/**
 * The bounds of one pass: requests beyond PASS_REQUESTS are not made (undefined), at most
 * PASS_PARALLEL run at once, and all are cut at the pass's deadline or when the worker stops.
 */
export class Pass {
  readonly outside: Outside;
  #left = PASS_REQUESTS;
  #running = 0;
  readonly #queue: (() => void)[] = [];

  constructor(client: OutsideClient, stopping: AbortSignal) {
    this.outside = { client, signal: AbortSignal.any([AbortSignal.timeout(PASS_MS), stopping]) };
  }

  get over(): boolean {
    return this.#left <= 0 || this.outside.signal!.aborted;
  }

  async run<T>(request: (outside: Outside) => Promise<T>): Promise<T | typeof SKIPPED> {
    if (this.over) return SKIPPED;
    this.#left--;
    if (this.#running < PASS_PARALLEL) this.#running++;
    else await new Promise<void>((resolve) => this.#queue.push(resolve)); // a finished request hands its slot over
    try {
      return await request(this.outside);
    } finally {
      const next = this.#queue.shift();
      if (next) next();
      else this.#running--;
    }
  }
}
export const SKIPPED = Symbol('skipped');

interface AnchorWorkerDeps {
  store: AnchorStore;
  config: AnchorConfig;
  /** The newest signed checkpoint of the log. */
  latest: () => Promise<SignedCheckpoint | undefined>;
  clock: Clock;
  logger: Logger;
}

/**
 * Anchors the log: on a schedule, the newest signed checkpoint is time-stamped by every configured
 * RFC 3161 authority and submitted to every configured OpenTimestamps calendar, and pending calendar
 * attestations are upgraded until Bitcoin attests them. One instance at a time does it (a lease in
 * the database); an anchor is stored once per tree size whatever happens. Nothing here is on the path
 * of proof creation: an authority that is down only delays the anchors.
 */
export class AnchorWorker {
  readonly #deps: AnchorWorkerDeps;
  readonly #holder = randomUUID();
  readonly #loop: BackgroundLoop;
  /** An anchor obtained for a checkpoint but not stored yet (the database failed): stored first next time. */
  #unsaved: StoredAnchor | undefined;
  readonly #client: OutsideClient;
  readonly #authorities: Endpoint[];
  readonly #calendars: Endpoint[];
  readonly #headers: Endpoint | undefined;
  /** Aborted when the worker stops: every open request ends. */
  #stopping = new AbortController();
  /** The upgrade pass under way, run beside the anchoring so that it never delays a new checkpoint. */
  #upgrading: Promise<void> | undefined;

  constructor(deps: AnchorWorkerDeps) {
    this.#deps = deps;
    const { config } = deps;
    this.#client = new OutsideClient(config.allowPrivateUrls);
    this.#authorities = config.tsaUrls.map((url) => new Endpoint(url));
    this.#calendars = config.otsCalendars.map((url) => new Endpoint(url));
    this.#headers =
      config.bitcoinHeadersUrl === undefined ? undefined : new Endpoint(config.bitcoinHeadersUrl);
    this.#loop = new BackgroundLoop({
      name: 'anchors',
      // Looks again when the next anchor is due, and at least every POLL_MS (another instance may sign).
      step: async () => Math.min(await this.step(), POLL_MS),
      logger: deps.logger,
      retry: { firstMs: POLL_MS, maxMs: MAX_STEP_RETRY_MS },
    });
  }

  get enabled(): boolean {
    const { tsaUrls, otsCalendars } = this.#deps.config;
    return tsaUrls.length + otsCalendars.length > 0;
  }

  start(): void {
    if (!this.enabled) return;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    this.#loop.start();
  }

  /** Ends every open request, waits for the step and the upgrade pass under way, and gives up the lease. */
  async stop(): Promise<void> {
    if (!this.enabled) return;
    this.#stopping.abort();
    await this.#loop.stop();
    await this.#upgrading;
    await this.#deps.store.release(this.#holder).catch(() => undefined);
  }

  /** The log grew on this instance: look now rather than at the next poll. */
  nudge(): void {
    this.#loop.nudge();
  }

  /**
   * One step: anchors the newest checkpoint when due, and starts an upgrade pass unless one is under
   * way (it runs on beside the next steps). Returns ms until the next anchor is due.
   */
  async step(): Promise<number> {
    const { store, clock, config } = this.#deps;
    const now = clock.now();
    if (!(await store.lease(this.#holder, now, now + LEASE_MS))) return POLL_MS;
    if (this.#unsaved !== undefined) await this.#store(this.#unsaved);
    const [newest, checkpoint] = await Promise.all([store.newest(), this.#deps.latest()]);
    const dueAt = (newest?.createdAt ?? -Infinity) + config.intervalMs;
    if (checkpoint !== undefined && checkpoint.treeSize > (newest?.treeSize ?? 0) && now >= dueAt) {
      await this.#anchor(checkpoint);
    }
    this.#upgrading ??= this.#upgrade()
      .catch((error: unknown) => this.#deps.logger.warn({ err: error }, 'anchors: upgrade pass failed'))
      .finally(() => {
        this.#upgrading = undefined;
      });
    return Number.isFinite(dueAt) ? dueAt - now : POLL_MS;
  }

  async #anchor(checkpoint: SignedCheckpoint): Promise<void> {
    const { store, clock } = this.#deps;
    const now = clock.now();
    const health = new Map((await store.endpoints()).map((e) => [e.url, e]));
    const ready = (endpoint: Endpoint) => (health.get(endpoint.name)?.retryAt ?? 0) <= now;
    const note = Buffer.from(checkpoint.checkpoint, 'utf8');
    const signedAt = (await store.signedAt(checkpoint.treeSize)) ?? now;
    const pass = new Pass(this.#client, this.#stopping.signal);
    const [tokens, calendars] = await Promise.all([
      Promise.all(
        this.#authorities.filter(ready).map((endpoint) =>
          this.#attempt({ url: endpoint.name, kind: 'rfc3161' }, health, pass, async (outside) => {
            const window = { signedAt, now: () => clock.now() };
            const { genTime, token } = await requestToken(outside, endpoint, note, window);
            return { url: endpoint.name, genTime: genTime.getTime(), token };
          }),
        ),
      ),
      Promise.all(
        this.#calendars.filter(ready).map((endpoint) =>
          this.#attempt({ url: endpoint.name, kind: 'opentimestamps' }, health, pass, async (outside) => ({
            calendar: endpoint.name,
            reply: await submitDigest(outside, endpoint, checkpoint.rootHash),
            status: 'pending' as const,
            bitcoinHeight: null,
            upgrade: null,
          })),
        ),
      ),
    ]);
    const found = {
      tokens: tokens.filter((t) => t !== undefined),
      calendars: calendars.filter((c) => c !== undefined),
    };
    if (found.tokens.length + found.calendars.length === 0) return;
    await this.#store({
      treeSize: checkpoint.treeSize,
      rootHash: checkpoint.rootHash,
      checkpoint: checkpoint.checkpoint,
      createdAt: clock.now(),
      ...found,
      ots: assembleCalendars(checkpoint.rootHash, found.calendars),
    });
  }

  /** Stores an anchor; kept to be stored again when the database fails, never asked for again. */
  async #store(anchor: StoredAnchor): Promise<void> {
    this.#unsaved = anchor;
    const added = await this.#deps.store.add(anchor);
    this.#unsaved = undefined;
    if (added) {
      this.#deps.logger.info(
        { treeSize: anchor.treeSize, rfc3161: anchor.tokens.length, opentimestamps: anchor.calendars.length },
        'anchors: checkpoint anchored',
      );
    }
  }

  /**
   * Runs one request to an endpoint, recording its health; undefined when it failed. A failure to
   * record the health is logged and does not discard what the endpoint answered.
   */
  async #attempt<T>(
    endpoint: { url: string; kind: EndpointHealth['kind'] },
    health: Map<string, EndpointHealth>,
    pass: Pass,
    request: (outside: Outside) => Promise<T>,
  ): Promise<T | undefined> {
    const { store, clock, logger } = this.#deps;
    let outcome: { result: T } | { reason: string };
    try {
      const result = await pass.run(request);
      if (result === SKIPPED) return undefined;
      outcome = { result };
    } catch (error) {
      if (this.#stopping.signal.aborted) return undefined;
      outcome = {
        reason: error instanceof AnchorFailure ? error.message : `${endpoint.url}: ${String(error)}`,
      };
    }
    const failures = 'reason' in outcome ? (health.get(endpoint.url)?.failures ?? 0) + 1 : 0;
    const retryIn = Math.min(1_000 * 2 ** (failures - 1), MAX_RETRY_MS);
    try {
      if ('reason' in outcome) {
        logger.warn({ endpoint: endpoint.url, failures, retryInMs: retryIn }, `anchors: ${outcome.reason}`);
        await store.endpointResult(endpoint, clock.now(), {
          error: outcome.reason,
          retryAt: clock.now() + retryIn,
        });
      } else if (health.get(endpoint.url)?.failures !== 0) {
        await store.endpointResult(endpoint, clock.now());
      }
    } catch (error) {
      logger.warn({ err: error, endpoint: endpoint.url }, 'anchors: the endpoint health was not recorded');
    }
    return 'result' in outcome ? outcome.result : undefined;
  }

  /** One upgrade pass over the due pending attestations, within the bounds of a Pass. */
  async #upgrade(): Promise<void> {
    const { store, clock } = this.#deps;
    const due = await store.dueUpgrades(clock.now(), UPGRADES_PER_STEP);
    if (due.length === 0) return;
    const health = new Map((await store.endpoints()).map((e) => [e.url, e]));
    const pass = new Pass(this.#client, this.#stopping.signal);
    const results = await Promise.allSettled(due.map((row) => this.#upgradeOne(row, health, pass)));
    for (const result of results) {
      if (result.status === 'rejected')
        this.#deps.logger.warn({ err: result.reason as Error }, 'anchors: an upgrade check failed');
    }
  }

  /**
   * Asks the configured calendar that issued a pending attestation for its upgrade (never any address
   * the attestation names); a Bitcoin attestation is checked against its block header when a header
   * server is configured, and stored as `claimed` when none is.
   */
  async #upgradeOne(row: DueUpgrade, health: Map<string, EndpointHealth>, pass: Pass): Promise<void> {
    const { store, clock, config, logger } = this.#deps;
    const key = { treeSize: row.treeSize, calendar: row.calendar };
    const calendar = this.#calendars.find((c) => c.name === row.calendar);
    const endpoint = { url: row.calendar, kind: 'opentimestamps' as const };
    const timestamp = readTimestamp(row.reply, row.rootHash);
    for (const { commitment } of calendar === undefined ? [] : pendingCommitments(timestamp)) {
      if (pass.over) return; // asked again in the next pass
      const reply = await this.#attempt(endpoint, health, pass, (outside) =>
        fetchUpgrade(outside, calendar!, commitment),
      );
      if (reply === undefined) continue;
      const claims = attestationsOf(readTimestamp(reply, commitment)).flatMap(({ msg, attestation }) =>
        attestation.kind === 'bitcoin' ? [{ msg, height: attestation.height }] : [],
      );
      if (claims.length === 0) continue;
      const claim = claims.reduce((a, b) => (b.height < a.height ? b : a));
      let status: 'bitcoin' | 'claimed' = 'claimed';
      if (this.#headers !== undefined) {
        const headers = this.#headers;
        const checked = await this.#attempt(endpoint, health, pass, async (outside) => {
          const { hash, header } = await fetchBitcoinHeader(outside, headers, claim.height);
          const problem = checkBitcoinHeader(header, {
            height: claim.height,
            blockHash: hash,
            merkleRoot: claim.msg,
            notBefore: row.signedAt - BLOCK_TIME_SLACK_MS,
          });
          if (problem !== undefined)
            throw new AnchorFailure(
              `OpenTimestamps calendar ${row.calendar} claims Bitcoin block ${claim.height} holds ` +
                `checkpoint ${row.treeSize}, but ${problem}; the claim is refused`,
            );
          return true;
        });
        if (checked === undefined) break; // refused or not checked: still pending, asked again later
        status = 'bitcoin';
      }
      await store.checked(key, { status, height: claim.height, commitment, timestamp: reply });
      const anchor = await store.at(row.treeSize);
      if (anchor !== undefined)
        await store.setOts(row.treeSize, assembleCalendars(anchor.rootHash, anchor.calendars));
      logger.info(
        { treeSize: row.treeSize, calendar: row.calendar, height: claim.height, status },
        status === 'bitcoin'
          ? 'anchors: Bitcoin attests the checkpoint, its block header checked'
          : 'anchors: a calendar claims Bitcoin attests the checkpoint (no header checked)',
      );
      return;
    }
    const now = clock.now();
    const wait = Math.min(config.intervalMs * 2 ** row.checks, MAX_UPGRADE_WAIT_MS);
    const giveUp = now + wait - row.submittedAt > UPGRADE_FOR_MS;
    if (giveUp) logger.warn(key, 'anchors: no Bitcoin attestation after 7 days; no longer asking');
    await store.checked(key, { status: 'pending', nextCheckAt: giveUp ? null : now + wait });
  }
}
