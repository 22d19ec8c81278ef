import type { Db } from './index.ts';

/** The one-row tables that say which instance runs a worker of which there is one (anchors, witnesses). */
export type LeaseTable = 'anchor_lease' | 'witness_lease';

/**
 * Takes or renews the lease of `table` for `holder` until `until`: true when `holder` now holds it (it
 * held it already, or the last holder's lease ran out). The database decides, on every instance.
 */
export async function takeLease(
  db: Db,
  table: LeaseTable,
  holder: string,
  now: number,
  until: number,
): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set({ holder, expires_at: until })
    .where('id', '=', 1)
    .where((eb) => eb.or([eb('holder', '=', holder), eb('expires_at', '<', now)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Gives the lease of `table` up, if `holder` holds it: another instance takes over at once. */
export async function releaseLease(db: Db, table: LeaseTable, holder: string): Promise<void> {
  await db
    .updateTable(table)
    .set({ holder: null, expires_at: 0 })
    .where('id', '=', 1)
    .where('holder', '=', holder)
    .execute();
}
