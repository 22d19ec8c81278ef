import { randomUUID } from 'node:crypto';
import type pino from 'pino';
import type { AnchorConfig } from '../config.ts';
import { attestationsOf, readTimestamp } from '../core/opentimestamps.ts';
import type { SignedCheckpoint } from '../log/log-service.ts';
import type { Clock } from '../platform/clock.ts';
import {
  AnchorFailure,
  fetchUpgrade,
  pendingCommitments,
  requestToken,
  submitDigest,
} from './anchor-clients.ts';
import type { AnchorStore, DueUpgrade, EndpointHealth, StoredAnchor } from './anchor-store.ts';

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
const UPGRADES_PER_STEP = 20;

interface AnchorWorkerDeps {
  store: AnchorStore;
  config: AnchorConfig;
  /** The newest signed checkpoint of the log. */
  latest: () => Promise<SignedCheckpoint | undefined>;
  clock: Clock;
  log: pino.Logger;
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
  #running = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  /** Vouchers obtained for a checkpoint but not stored yet (the database failed): stored first next time. */
  #unsaved: StoredAnchor | undefined;

  constructor(deps: AnchorWorkerDeps) {
    this.#deps = deps;
  }

  get enabled(): boolean {
    const { tsaUrls, otsCalendars } = this.#deps.config;
    return tsaUrls.length + otsCalendars.length > 0;
  }

  start(): void {
    if (this.#running || !this.enabled) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    await this.#deps.store.release(this.#holder).catch(() => undefined);
  }

  /** The log grew on this instance: look now rather than at the next poll. */
  nudge(): void {
    this.#wake?.();
  }

  async #run(): Promise<void> {
    while (this.#running) {
      let wait = POLL_MS;
      try {
        wait = await this.step();
      } catch (error) {
        this.#deps.log.warn({ err: error }, 'anchors: step failed, retrying');
      }
      if (!this.#running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, Math.min(wait, POLL_MS)));
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }

  /** One pass: anchors the newest checkpoint when due, then due upgrades. Returns ms until the next due. */
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
    await this.#upgrade();
    return Number.isFinite(dueAt) ? dueAt - now : POLL_MS;
  }

  async #anchor(checkpoint: SignedCheckpoint): Promise<void> {
    const { store, clock, config } = this.#deps;
    const now = clock.now();
    const health = new Map((await store.endpoints()).map((e) => [e.url, e]));
    const ready = (url: string) => (health.get(url)?.retryAt ?? 0) <= now;
    const note = Buffer.from(checkpoint.checkpoint, 'utf8');
    const [tokens, calendars] = await Promise.all([
      Promise.all(
        config.tsaUrls.filter(ready).map((url) =>
          this.#attempt({ url, kind: 'rfc3161' }, health, async () => {
            const { genTime, token } = await requestToken(url, note);
            return { url, genTime: genTime.getTime(), token };
          }),
        ),
      ),
      Promise.all(
        config.otsCalendars.filter(ready).map((calendar) =>
          this.#attempt({ url: calendar, kind: 'opentimestamps' }, health, async () => ({
            calendar,
            reply: await submitDigest(calendar, checkpoint.rootHash),
            status: 'pending' as const,
            bitcoinHeight: null,
            upgrade: null,
          })),
        ),
      ),
    ]);
    const anchor: StoredAnchor = {
      treeSize: checkpoint.treeSize,
      rootHash: checkpoint.rootHash,
      checkpoint: checkpoint.checkpoint,
      createdAt: clock.now(),
      tokens: tokens.filter((t) => t !== undefined),
      calendars: calendars.filter((c) => c !== undefined),
    };
    if (anchor.tokens.length + anchor.calendars.length === 0) return;
    await this.#store(anchor);
  }

  /** Stores an anchor; kept to be stored again when the database fails, never asked for again. */
  async #store(anchor: StoredAnchor): Promise<void> {
    this.#unsaved = anchor;
    const added = await this.#deps.store.add(anchor);
    this.#unsaved = undefined;
    if (added) {
      this.#deps.log.info(
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
    request: () => Promise<T>,
  ): Promise<T | undefined> {
    const { store, clock, log } = this.#deps;
    let outcome: { result: T } | { reason: string };
    try {
      outcome = { result: await request() };
    } catch (error) {
      outcome = {
        reason: error instanceof AnchorFailure ? error.message : `${endpoint.url}: ${String(error)}`,
      };
    }
    const failures = 'reason' in outcome ? (health.get(endpoint.url)?.failures ?? 0) + 1 : 0;
    const retryIn = Math.min(1_000 * 2 ** (failures - 1), MAX_RETRY_MS);
    try {
      if ('reason' in outcome) {
        log.warn({ endpoint: endpoint.url, failures, retryInMs: retryIn }, `anchors: ${outcome.reason}`);
        await store.endpointResult(endpoint, clock.now(), {
          error: outcome.reason,
          retryAt: clock.now() + retryIn,
        });
      } else if (health.get(endpoint.url)?.failures !== 0) {
        await store.endpointResult(endpoint, clock.now());
      }
    } catch (error) {
      log.warn({ err: error, endpoint: endpoint.url }, 'anchors: the endpoint health was not recorded');
    }
    return 'result' in outcome ? outcome.result : undefined;
  }

  async #upgrade(): Promise<void> {
    const { store, clock } = this.#deps;
    const due = await store.dueUpgrades(clock.now(), UPGRADES_PER_STEP);
    if (due.length === 0) return;
    const health = new Map((await store.endpoints()).map((e) => [e.url, e]));
    for (const row of due) await this.#upgradeOne(row, health);
  }

  async #upgradeOne(row: DueUpgrade, health: Map<string, EndpointHealth>): Promise<void> {
    const { store, clock, config, log } = this.#deps;
    const key = { treeSize: row.treeSize, calendar: row.calendar };
    const timestamp = readTimestamp(row.reply, row.rootHash);
    for (const { commitment, uri } of pendingCommitments(timestamp)) {
      const reply = await this.#attempt({ url: row.calendar, kind: 'opentimestamps' }, health, () =>
        fetchUpgrade(upgradeBase(row.calendar, uri), commitment),
      );
      if (reply === undefined) continue;
      const heights = attestationsOf(readTimestamp(reply, commitment)).flatMap(({ attestation }) =>
        attestation.kind === 'bitcoin' ? [attestation.height] : [],
      );
      if (heights.length > 0) {
        await store.checked(key, {
          status: 'bitcoin',
          height: Math.min(...heights),
          commitment,
          timestamp: reply,
        });
        log.info(
          { treeSize: row.treeSize, calendar: row.calendar },
          'anchors: Bitcoin attests the checkpoint',
        );
        return;
      }
    }
    const now = clock.now();
    const wait = Math.min(config.intervalMs * 2 ** row.checks, MAX_UPGRADE_WAIT_MS);
    const giveUp = now + wait - row.submittedAt > UPGRADE_FOR_MS;
    if (giveUp) log.warn(key, 'anchors: no Bitcoin attestation after 7 days; no longer asking');
    await store.checked(key, { status: 'pending', nextCheckAt: giveUp ? null : now + wait });
  }
}

/**
 * Where to ask for an upgrade: the calendar that the pending attestation names (public calendars
 * aggregate for one another), when it is served over HTTPS or is the configured calendar itself;
 * otherwise the configured calendar, so an answer cannot point the service at any other address.
 */
function upgradeBase(calendar: string, uri: string): string {
  if (!URL.canParse(uri)) return calendar;
  const named = new URL(uri);
  if (named.protocol === 'https:' || named.origin === new URL(calendar).origin)
    return uri.replace(/\/+$/, '');
  return calendar;
}
