import type { Insertable, Selectable, SelectQueryBuilder } from 'kysely';
import type { Db } from '../db/index.ts';
import { isPlausibleId } from '../core/ids.ts';
import type {
  Database,
  WebhookDeliveriesTable,
  WebhookEventsTable,
  WebhooksTable,
  WebhookTasksTable,
} from '../db/schema.ts';

export type WebhookRow = Selectable<WebhooksTable>;
export type TaskRow = Selectable<WebhookTasksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
type EventRow = Selectable<WebhookEventsTable>;

/**
 * Orders a list of webhooks or of deliveries the way each is shown: by creation time, ties by id, oldest
 * first (`asc`) or newest first (`desc`).
 */
function byCreation(direction: 'asc' | 'desc') {
  return <T extends 'webhooks' | 'webhook_deliveries', O>(
    query: SelectQueryBuilder<Database, T, O>,
  ): SelectQueryBuilder<Database, T, O> => query.orderBy('created_at', direction).orderBy('id', direction);
}

export async function insertWebhook(db: Db, row: Insertable<WebhooksTable>): Promise<void> {
  await db.insertInto('webhooks').values(row).execute();
}

export async function findWebhook(db: Db, id: string): Promise<WebhookRow | undefined> {
  if (!isPlausibleId(id)) return undefined;
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listWebhooks(db: Db, accountId: string): Promise<WebhookRow[]> {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('account_id', '=', accountId)
    .$call(byCreation('asc'))
    .execute();
}

export async function activeWebhooksOf(db: Db, accountIds: string[]): Promise<WebhookRow[]> {
  if (accountIds.length === 0) return [];
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('account_id', 'in', accountIds)
    .where('status', '=', 'active')
    .execute();
}

export async function disableWebhook(db: Db, id: string, now: number): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ status: 'disabled', updated_at: now })
    .where('id', '=', id)
    .execute();
}

export async function insertEvents(
  db: Db,
  events: Insertable<WebhookEventsTable>[],
  tasks: Insertable<WebhookTasksTable>[],
): Promise<void> {
  if (events.length > 0) await db.insertInto('webhook_events').values(events).execute();
  if (tasks.length > 0) await db.insertInto('webhook_tasks').values(tasks).execute();
}

export async function findEvent(db: Db, id: string): Promise<EventRow | undefined> {
  return db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Claims up to `limit` due tasks for `owner` until `leaseUntil`: a task is due when pending, its time
 * has come, and no live lease holds it. An expired lease (a dispatcher that died) makes it claimable
 * again, so deliveries resume after a crash. On PostgreSQL the inner select skips rows another
 * instance is claiming at the same moment.
 */
export async function claimDueTasks(
  db: Db,
  engine: 'sqlite' | 'postgres',
  owner: string,
  now: number,
  leaseUntil: number,
  limit: number,
): Promise<TaskRow[]> {
  return db
    .updateTable('webhook_tasks')
    .set({ lease_owner: owner, lease_until: leaseUntil })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('webhook_tasks')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]))
        .orderBy('next_attempt_at', 'asc')
        .limit(limit);
      if (engine === 'postgres') due = due.forUpdate().skipLocked();
      return due;
    })
    .returningAll()
    .execute();
}

/** Records one attempt and moves its task on, atomically. */
export async function recordAttempt(
  db: Db,
  delivery: Insertable<WebhookDeliveriesTable>,
  task: { id: string; status: string; attempts: number; nextAttemptAt: number },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('webhook_deliveries').values(delivery).execute();
    await trx
      .updateTable('webhook_tasks')
      .set({
        status: task.status,
        attempts: task.attempts,
        next_attempt_at: task.nextAttemptAt,
        lease_owner: null,
        lease_until: null,
      })
      .where('id', '=', task.id)
      .execute();
  });
}

/** The newest attempts of one webhook. */
export async function recentDeliveries(db: Db, webhookId: string, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('webhook_id', '=', webhookId)
    .$call(byCreation('desc'))
    .limit(limit)
    .execute();
}
