import type { AnchorConfig } from '../config.ts';
import { applyOp, proofOps, writeDetachedChain } from '../core/opentimestamps.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { AppError } from '../errors.ts';
import { encodeInclusion, type LogService } from '../log/log-service.ts';
import { proofNotFound, type ProofsService } from '../proofs/proofs-service.ts';
import { assembleCalendars } from './anchor-ots.ts';
import type { AnchorStore, StoredAnchor } from './anchor-store.ts';
import { shownName } from './outside-http.ts';

/**
 * The reads of anchors: anchored checkpoints, the anchor of one proof with its inclusion in the
 * anchored tree, the proof's OpenTimestamps file, and how the anchoring goes (/api/status).
 */

interface AnchorsServiceDeps {
  store: AnchorStore;
  config: AnchorConfig;
  proofs: Pick<ProofsService, 'get'>;
  log: Pick<LogService, 'inclusion'>;
}

/** An anchor as the API gives it (docs/api.md, "Anchors"). */
function present(anchor: StoredAnchor) {
  return {
    treeSize: anchor.treeSize,
    rootHash: anchor.rootHash.toString('base64'),
    checkpoint: anchor.checkpoint,
    rfc3161: anchor.tokens.map((t) => ({
      url: shownName(t.url),
      genTime: new Date(t.genTime).toISOString(),
      token: t.token.toString('base64'),
    })),
    opentimestamps: anchor.calendars.map((c) => ({
      calendar: shownName(c.calendar),
      status: c.status,
      ...(c.bitcoinHeight === null ? {} : { bitcoinHeight: c.bitcoinHeight }),
    })),
  };
}

export class AnchorsService {
  readonly #deps: AnchorsServiceDeps;

  constructor(deps: AnchorsServiceDeps) {
    this.#deps = deps;
  }

  get enabled(): boolean {
    return this.#deps.config.tsaUrls.length + this.#deps.config.otsCalendars.length > 0;
  }

  async list(limit: number, cursor?: number) {
    const anchors = await this.#deps.store.list(limit + 1, cursor);
    const page = anchors.slice(0, limit);
    return {
      anchors: page.map(present),
      nextCursor: anchors.length > limit ? String(page[page.length - 1]!.treeSize) : null,
    };
  }

  /** The earliest anchored checkpoint that holds the proof, with the proof's inclusion in it. */
  async ofProof(id: string) {
    const { proof, anchor } = await this.#anchored(id, 'anchors');
    const inclusion = encodeInclusion(await this.#deps.log.inclusion(proof.log.leafIndex, anchor.treeSize));
    return {
      proofId: proof.id,
      ...present(anchor),
      inclusion: {
        leafIndex: inclusion.leafIndex,
        treeSize: inclusion.treeSize,
        rootHash: inclusion.rootHash,
        hashes: inclusion.hashes,
      },
    };
  }

  /** The earliest anchor that holds a stored proof's log entry, for its page; undefined before. */
  async anchorOf(proof: { log: { leafIndex: number } | null }) {
    if (proof.log === null) return undefined;
    const anchor = await this.#deps.store.earliestCovering(proof.log.leafIndex);
    return anchor && present(anchor);
  }

  /**
   * The OpenTimestamps file of the caller's own file: from the proof's contentHash through its leaf
   * and audit path to the anchored root, then through each calendar's operations to its attestation.
   * The calendars' part is the anchor's stored one (assembled when it was stored, or here once for an
   * anchor stored before that); only the proof's own path is computed per download.
   */
  async otsFile(id: string): Promise<Buffer> {
    const { proof, anchor } = await this.#anchored(id, 'opentimestamps');
    const inclusion = await this.#deps.log.inclusion(proof.log.leafIndex, anchor.treeSize);
    const contentHash = Buffer.from(proof.contentHash.slice('sha256:'.length), 'hex');
    const ops = proofOps({
      leaf: Buffer.from(signingMessage(proof), 'utf8'),
      contentHash,
      leafIndex: inclusion.leafIndex,
      treeSize: inclusion.treeSize,
      hashes: inclusion.hashes.map((h) => Buffer.from(h)),
    });
    const reached = ops.reduce<Buffer>((msg, op) => applyOp(op, msg), contentHash);
    if (!reached.equals(anchor.rootHash)) throw new Error('the proof path does not reach the anchored root');
    let tail = anchor.ots;
    if (tail === null) {
      tail = assembleCalendars(anchor.rootHash, anchor.calendars)!;
      await this.#deps.store.setOts(anchor.treeSize, tail);
    }
    return writeDetachedChain(contentHash, ops, tail);
  }

  async #anchored(id: string, need: 'anchors' | 'opentimestamps') {
    const proof = await this.#deps.proofs.get(id);
    if (proof === undefined) throw proofNotFound(id);
    const log = proof.log;
    const anchor =
      log === null
        ? undefined
        : await this.#deps.store.earliestCovering(log.leafIndex, {
            withCalendars: need === 'opentimestamps',
          });
    if (log === null || anchor === undefined) throw this.#notYet(id, need);
    return { proof: { ...proof, log }, anchor };
  }

  #notYet(id: string, need: 'anchors' | 'opentimestamps'): AppError {
    const { config } = this.#deps;
    const configured = need === 'anchors' ? this.enabled : config.otsCalendars.length > 0;
    if (!configured) {
      return new AppError(
        'not_yet_anchored',
        need === 'anchors'
          ? 'This service anchors its log with no outside authority or calendar, so this proof has no anchor.'
          : 'This service submits its log to no OpenTimestamps calendar, so this proof has no .ots file.',
        { id },
      );
    }
    const retryAfter = Math.max(1, Math.ceil(config.intervalMs / 1000));
    return new AppError(
      'not_yet_anchored',
      `The proof is not in an anchored checkpoint yet; checkpoints are anchored every ${retryAfter} s or so. Retry later.`,
      { id },
      { 'Retry-After': String(retryAfter) },
    );
  }

  /** How anchoring goes, for /api/status: each endpoint's health and what waits for Bitcoin. */
  async status() {
    const { store, config } = this.#deps;
    if (!this.enabled) return { enabled: false as const };
    const [newest, endpoints, pending] = await Promise.all([
      store.newest(),
      store.endpoints(),
      store.pendingCount(),
    ]);
    const health = new Map(endpoints.map((e) => [e.url, e]));
    const iso = (t: number | null | undefined) => (t == null ? null : new Date(t).toISOString());
    const endpoint = (configured: string, kind: 'rfc3161' | 'opentimestamps') => {
      const url = shownName(configured);
      const e = health.get(url);
      return {
        url,
        kind,
        state:
          e === undefined ? ('unused' as const) : e.failures > 0 ? ('failing' as const) : ('ok' as const),
        consecutiveFailures: e?.failures ?? 0,
        lastSuccessAt: iso(e?.lastSuccessAt),
        lastFailureAt: iso(e?.lastFailureAt),
        lastError: e && e.failures > 0 ? e.lastError : null,
      };
    };
    return {
      enabled: true as const,
      intervalMs: config.intervalMs,
      lastAnchoredTreeSize: newest?.treeSize ?? null,
      lastAnchoredAt: iso(newest?.createdAt),
      pendingBitcoin: pending,
      endpoints: [
        ...config.tsaUrls.map((url) => endpoint(url, 'rfc3161')),
        ...config.otsCalendars.map((url) => endpoint(url, 'opentimestamps')),
      ],
    };
  }
}
