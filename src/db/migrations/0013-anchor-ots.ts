import type { Kysely } from 'kysely';
import type { MigrationContext } from './index.ts';

/**
 * The OpenTimestamps part of each anchor, assembled once: `anchors.ots` is every calendar's timestamp
 * of the anchored root hash merged into one (serialized, base64), written when the anchor or a
 * calendar's upgrade is stored, so that a proof's `.ots` download only puts the proof's own path in
 * front of it. Null for an anchor without calendars, and for anchors stored before (assembled once on
 * their first download). `anchor_calendars.status` may now also be `claimed`: a calendar says Bitcoin
 * holds it, and no block header has been checked.
 */
export async function up(db: Kysely<unknown>, _context: MigrationContext): Promise<void> {
  await db.schema.alterTable('anchors').addColumn('ots', 'text').execute();
}
