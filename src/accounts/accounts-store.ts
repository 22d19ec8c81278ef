import type { Insertable, Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { AccountsTable, ApiKeysTable } from '../db/schema.ts';
import { isPlausibleId } from '../core/ids.ts';

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;

export async function insertAccount(db: Db, row: Insertable<AccountsTable>): Promise<void> {
  await db.insertInto('accounts').values(row).execute();
}

export async function listAccounts(db: Db): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('created_at', 'asc').orderBy('id', 'asc').execute();
}

export async function findAccount(db: Db, id: string): Promise<AccountRow | undefined> {
  if (!isPlausibleId(id)) return undefined;
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertApiKey(db: Db, row: Insertable<ApiKeysTable>): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

export async function listApiKeys(db: Db, accountId: string): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .orderBy('created_at', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export async function findApiKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  if (!isPlausibleId(id)) return undefined;
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The active key with this hash; a revoked one is not found, as an unknown one is not. */
export async function findActiveApiKeyByHash(db: Db, keyHash: string): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('key_hash', '=', keyHash)
    .where('status', '=', 'active')
    .executeTakeFirst();
}

/** Revokes once: a second revoke changes nothing, so the first `revoked_at` stays. */
export async function revokeApiKey(db: Db, id: string, now: number): Promise<void> {
  if (!isPlausibleId(id)) return;
  await db
    .updateTable('api_keys')
    .set({ status: 'revoked', revoked_at: now })
    .where('id', '=', id)
    .where('status', '=', 'active')
    .execute();
}

/** Records use at most once a minute per key, and never touches anything else. */
export async function touchApiKey(db: Db, id: string, now: number, minIntervalMs: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', now - minIntervalMs)]))
    .execute();
}
