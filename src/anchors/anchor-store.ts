import type { Insertable } from 'kysely';
import type { Db } from '../db/index.ts';
import { releaseLease, takeLease } from '../db/lease.ts';
import type { Database } from '../db/schema.ts';

/** Every read and write of the anchor tables (migration 0012-anchors). */

export interface StoredToken {
  url: string;
  genTime: number;
  /** DER TimeStampToken. */
  token: Buffer;
}

export interface StoredCalendar {
  calendar: string;
  /** The calendar's serialized timestamp of the root hash. */
  reply: Buffer;
  /** bitcoin: its block header was checked; claimed: the calendar says so, no header was checked. */
  status: 'pending' | 'claimed' | 'bitcoin';
  bitcoinHeight: number | null;
  /** The commitment the upgrade starts from and the calendar's serialized timestamp of it. */
  upgrade: { commitment: Buffer; timestamp: Buffer } | null;
}

export interface StoredAnchor {
  treeSize: number;
  rootHash: Buffer;
  checkpoint: string;
  createdAt: number;
  tokens: StoredToken[];
  calendars: StoredCalendar[];
  /** The calendars' timestamps of the root merged and serialized (anchor-ots.ts); null without calendars, or until assembled. */
  ots: Buffer | null;
}

export interface EndpointHealth {
  url: string;
  kind: 'rfc3161' | 'opentimestamps';
  failures: number;
  lastSuccessAt: number | null;
  lastFailureAt: number | null;
  lastError: string | null;
  retryAt: number | null;
}

export interface DueUpgrade {
  treeSize: number;
  rootHash: Buffer;
  calendar: string;
  reply: Buffer;
  checks: number;
  submittedAt: number;
  /** When the log signed the anchored checkpoint (ms). */
  signedAt: number;
}

/** An upgrade is stored with the commitment it starts from, hex, then a colon, then the timestamp. */
const packUpgrade = (upgrade: { commitment: Buffer; timestamp: Buffer }): string =>
  `${upgrade.commitment.toString('hex')}:${upgrade.timestamp.toString('base64')}`;
function unpackUpgrade(text: string | null): StoredCalendar['upgrade'] {
  if (text === null) return null;
  const [hex, base64] = text.split(':');
  return { commitment: Buffer.from(hex!, 'hex'), timestamp: Buffer.from(base64!, 'base64') };
}

/** Inserts an anchor's tokens or calendar submissions in one statement; none when it has none. */
async function insertRows<T extends 'anchor_tokens' | 'anchor_calendars'>(
  db: Db,
  table: T,
  rows: Insertable<Database[T]>[],
): Promise<void> {
  if (rows.length > 0) await db.insertInto(table).values(rows).execute();
}

export class AnchorStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Takes or renews the anchoring lease for `holder` until `until` (db/lease.ts). */
  lease(holder: string, now: number, until: number): Promise<boolean> {
    return takeLease(this.#db, 'anchor_lease', holder, now, until);
  }

  release(holder: string): Promise<void> {
    return releaseLease(this.#db, 'anchor_lease', holder);
  }

  /** The largest anchored tree and when it was anchored; undefined before the first anchor. */
  async newest(): Promise<{ treeSize: number; createdAt: number } | undefined> {
    const row = await this.#db
      .selectFrom('anchors')
      .select(['tree_size', 'created_at'])
      .orderBy('tree_size', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && { treeSize: Number(row.tree_size), createdAt: Number(row.created_at) };
  }

  /** Stores an anchor and its pieces (tokens, calendar submissions) at once; false when that tree was anchored already. */
  async add(anchor: StoredAnchor): Promise<boolean> {
    return this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('anchors')
        .values({
          tree_size: anchor.treeSize,
          root_hash: anchor.rootHash.toString('base64'),
          checkpoint: anchor.checkpoint,
          created_at: anchor.createdAt,
          ots: anchor.ots && anchor.ots.toString('base64'),
        })
        .onConflict((oc) => oc.column('tree_size').doNothing())
        .returning('tree_size')
        .executeTakeFirst();
      if (inserted === undefined) return false;
      await insertRows(
        trx,
        'anchor_tokens',
        anchor.tokens.map((t) => ({
          tree_size: anchor.treeSize,
          url: t.url,
          gen_time: t.genTime,
          token: t.token.toString('base64'),
        })),
      );
      await insertRows(
        trx,
        'anchor_calendars',
        anchor.calendars.map((c) => ({
          tree_size: anchor.treeSize,
          calendar: c.calendar,
          reply: c.reply.toString('base64'),
          status: c.status,
          bitcoin_height: c.bitcoinHeight,
          upgrade: c.upgrade && packUpgrade(c.upgrade),
          next_check_at: anchor.createdAt,
          submitted_at: anchor.createdAt,
        })),
      );
      return true;
    });
  }

  /** Anchors newest first, below `before` when given. */
  async list(limit: number, before?: number): Promise<StoredAnchor[]> {
    let query = this.#db.selectFrom('anchors').selectAll().orderBy('tree_size', 'desc').limit(limit);
    if (before !== undefined) query = query.where('tree_size', '<', before);
    return this.#withPieces(await query.execute());
  }

  /** The earliest anchor of a tree that holds leaf `leafIndex`. */
  async earliestCovering(
    leafIndex: number,
    { withCalendars = false }: { withCalendars?: boolean } = {},
  ): Promise<StoredAnchor | undefined> {
    let query = this.#db.selectFrom('anchors').selectAll().where('tree_size', '>', leafIndex);
    if (withCalendars) {
      query = query.where((eb) =>
        eb.exists(
          eb
            .selectFrom('anchor_calendars as c')
            .select('c.tree_size')
            .whereRef('c.tree_size', '=', 'anchors.tree_size'),
        ),
      );
    }
    const rows = await query.orderBy('tree_size', 'asc').limit(1).execute();
    return (await this.#withPieces(rows))[0];
  }

  async #withPieces(
    rows: {
      tree_size: number;
      root_hash: string;
      checkpoint: string;
      created_at: number;
      ots: string | null;
    }[],
  ): Promise<StoredAnchor[]> {
    if (rows.length === 0) return [];
    const sizes = rows.map((r) => r.tree_size);
    const [tokens, calendars] = await Promise.all([
      this.#db
        .selectFrom('anchor_tokens')
        .selectAll()
        .where('tree_size', 'in', sizes)
        .orderBy('url')
        .execute(),
      this.#db
        .selectFrom('anchor_calendars')
        .selectAll()
        .where('tree_size', 'in', sizes)
        .orderBy('calendar')
        .execute(),
    ]);
    return rows.map((row) => ({
      treeSize: Number(row.tree_size),
      rootHash: Buffer.from(row.root_hash, 'base64'),
      checkpoint: row.checkpoint,
      createdAt: Number(row.created_at),
      ots: row.ots === null ? null : Buffer.from(row.ots, 'base64'),
      tokens: tokens
        .filter((t) => Number(t.tree_size) === Number(row.tree_size))
        .map((t) => ({ url: t.url, genTime: Number(t.gen_time), token: Buffer.from(t.token, 'base64') })),
      calendars: calendars
        .filter((c) => Number(c.tree_size) === Number(row.tree_size))
        .map((c) => ({
          calendar: c.calendar,
          reply: Buffer.from(c.reply, 'base64'),
          status: c.status,
          bitcoinHeight: c.bitcoin_height,
          upgrade: unpackUpgrade(c.upgrade),
        })),
    }));
  }

  /** Pending calendar attestations whose next upgrade check is due, oldest first. */
  async dueUpgrades(now: number, limit: number): Promise<DueUpgrade[]> {
    const rows = await this.#db
      .selectFrom('anchor_calendars as c')
      .innerJoin('anchors as a', 'a.tree_size', 'c.tree_size')
      .leftJoin('log_checkpoints as l', 'l.tree_size', 'c.tree_size')
      .select([
        'c.tree_size',
        'a.root_hash',
        'a.created_at',
        'l.created_at as signed_at',
        'c.calendar',
        'c.reply',
        'c.checks',
        'c.submitted_at',
      ])
      .where('c.status', '=', 'pending')
      .where('c.next_check_at', '<=', now)
      .orderBy('c.next_check_at')
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      treeSize: Number(r.tree_size),
      rootHash: Buffer.from(r.root_hash, 'base64'),
      calendar: r.calendar,
      reply: Buffer.from(r.reply, 'base64'),
      checks: r.checks,
      submittedAt: Number(r.submitted_at),
      signedAt: Number(r.signed_at ?? r.created_at),
    }));
  }

  /**
   * Records one upgrade check: still pending until `nextCheckAt` (null: given up), or attested in
   * Bitcoin (`bitcoin`, its header checked, or `claimed`, unchecked).
   */
  async checked(
    key: { treeSize: number; calendar: string },
    outcome:
      | { status: 'pending'; nextCheckAt: number | null }
      | { status: 'bitcoin' | 'claimed'; height: number; commitment: Buffer; timestamp: Buffer },
  ): Promise<void> {
    const update =
      outcome.status === 'pending'
        ? { next_check_at: outcome.nextCheckAt }
        : {
            status: outcome.status,
            bitcoin_height: outcome.height,
            upgrade: packUpgrade(outcome),
            next_check_at: null,
          };
    await this.#db.transaction().execute(async (trx) => {
      await trx
        .updateTable('anchor_calendars')
        .set((eb) => ({ ...update, checks: eb('checks', '+', 1) }))
        .where('tree_size', '=', key.treeSize)
        .where('calendar', '=', key.calendar)
        .execute();
      // The assembled .ots no longer holds everything: assembled again (setOts, or the next download).
      if (outcome.status !== 'pending')
        await trx.updateTable('anchors').set({ ots: null }).where('tree_size', '=', key.treeSize).execute();
    });
  }

  /** When the log signed the checkpoint of a tree size (ms); undefined when it has no record of it. */
  async signedAt(treeSize: number): Promise<number | undefined> {
    const row = await this.#db
      .selectFrom('log_checkpoints')
      .select('created_at')
      .where('tree_size', '=', treeSize)
      .executeTakeFirst();
    return row && Number(row.created_at);
  }

  /** The anchor of one tree size, with its tokens and calendar submissions. */
  async at(treeSize: number): Promise<StoredAnchor | undefined> {
    const rows = await this.#db.selectFrom('anchors').selectAll().where('tree_size', '=', treeSize).execute();
    return (await this.#withPieces(rows))[0];
  }

  /** Stores the assembled OpenTimestamps part of an anchor (anchor-ots.ts). */
  async setOts(treeSize: number, ots: Buffer | null): Promise<void> {
    await this.#db
      .updateTable('anchors')
      .set({ ots: ots && ots.toString('base64') })
      .where('tree_size', '=', treeSize)
      .execute();
  }

  async pendingCount(): Promise<number> {
    const row = await this.#db
      .selectFrom('anchor_calendars')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async endpoints(): Promise<EndpointHealth[]> {
    const rows = await this.#db.selectFrom('anchor_endpoints').selectAll().orderBy('url').execute();
    const time = (v: number | null) => (v === null ? null : Number(v));
    return rows.map((r) => ({
      url: r.url,
      kind: r.kind,
      failures: r.failures,
      lastSuccessAt: time(r.last_success_at),
      lastFailureAt: time(r.last_failure_at),
      lastError: r.last_error,
      retryAt: time(r.retry_at),
    }));
  }

  /** Records an endpoint's success or failure (with when to try it again). */
  async endpointResult(
    endpoint: { url: string; kind: EndpointHealth['kind'] },
    now: number,
    failure?: { error: string; retryAt: number },
  ): Promise<void> {
    const values = failure
      ? { last_failure_at: now, last_error: failure.error, retry_at: failure.retryAt }
      : { last_success_at: now, retry_at: null, failures: 0 };
    await this.#db
      .insertInto('anchor_endpoints')
      .values({ url: endpoint.url, kind: endpoint.kind, failures: failure ? 1 : 0, ...values })
      .onConflict((oc) =>
        oc.column('url').doUpdateSet((eb) => ({
          ...values,
          kind: endpoint.kind,
          ...(failure ? { failures: eb('anchor_endpoints.failures', '+', 1) } : {}),
        })),
      )
      .execute();
  }
}
