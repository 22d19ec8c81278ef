import { chainTo, graft, readTimestamp, writeTimestamp } from '../core/opentimestamps.ts';
import type { StoredCalendar } from './anchor-store.ts';

/**
 * The OpenTimestamps part of an anchor, assembled once when the anchor or an upgrade is stored
 * (migration 0013-anchor-ots): every calendar's timestamp of the root hash, each with its upgrade
 * grafted on once it has one, merged into one serialized timestamp. Reading and writing it computes
 * every operation the calendars sent; a download only puts the proof's own path in front of it.
 */
export function assembleCalendars(rootHash: Buffer, calendars: StoredCalendar[]): Buffer | null {
  if (calendars.length === 0) return null;
  const tails = calendars.map((calendar) => {
    const timestamp = readTimestamp(calendar.reply, rootHash);
    if (calendar.upgrade === null) return timestamp;
    return graft(timestamp, readTimestamp(calendar.upgrade.timestamp, calendar.upgrade.commitment));
  });
  return writeTimestamp(chainTo(rootHash, [], tails));
}
