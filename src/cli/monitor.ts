import { setTimeout as pause } from 'node:timers/promises';
import {
  auditEntries,
  describeCheckpoint,
  HashproofError,
  LogCheckError,
  type HashproofClient,
  type ManifestKey,
  type Observation,
} from '../client/client.ts';
import { logKeyOf, logMemory, olderCheckpoint, proverOf } from './log-memory.ts';
import { EXIT, print, UsageError } from './output.ts';
import { pinnedKeys } from './trusted-keys.ts';

const DEFAULT_INTERVAL_MS = 60_000;

export const MONITOR_HELP = `Usage: hashproof monitor [--url U] [--once] [--interval-ms N] [--keys manifest.json]

Follows the service's transparency log. For each new checkpoint it checks the signature with the log
key (of --keys, a saved key manifest, or the service's), its consistency with the checkpoint seen before
(remembered in HASHPROOF_STATE_DIR), and that the entries added since the last check hash to the
log's tiles and the tiles to the checkpoint's root. Prints one line per checkpoint checked and looks
again every --interval-ms (default 60000); --once looks once. Exits 1 at the first failure (a fork is
"log fork detected: …"), 0 after --once when everything held.`;

/**
 * `hashproof monitor [--once] [--interval-ms N]`: follows the service's log. For each new checkpoint it
 * checks the signature (with the log key of the trusted manifest), the consistency with the checkpoint
 * remembered, and the entries added since the last check against the tiles, which must hash to the
 * checkpoint's root (docs/cli.md). Prints one line per checkpoint checked; exits 1 at the first failure.
 */
export async function monitor(
  client: HashproofClient,
  values: { once?: boolean; 'interval-ms'?: string; keys?: string },
  serviceKeys: () => Promise<ManifestKey[]>,
): Promise<number> {
  // The log key of a saved manifest (--keys), else of the service's.
  const pinned = values.keys;
  const keysOf = pinned === undefined ? serviceKeys : async () => (await pinnedKeys(pinned)).keys;
  const raw = values['interval-ms'];
  const interval = raw === undefined ? DEFAULT_INTERVAL_MS : Number(raw);
  if (!/^\d+$/.test(raw ?? '0') || !Number.isSafeInteger(interval) || interval < 1)
    throw new UsageError(`--interval-ms takes a whole number of milliseconds, got ${JSON.stringify(raw)}`);
  let lastShown: string | undefined;
  for (;;) {
    try {
      const { note, line } = await check(client, await keysOf());
      if (values.once || note !== lastShown) print(line);
      lastShown = note;
    } catch (error) {
      // Following a log outlives an outage of the service; what the log served never goes unnoticed.
      const isOutage = error instanceof HashproofError && (error.isNetworkError || error.status >= 500);
      if (values.once || !isOutage) throw error;
      process.stderr.write(`hashproof: ${error.message}; looking again in ${interval} ms\n`);
    }
    if (values.once) return EXIT.ok;
    await pause(interval);
  }
}

/** One look at the log: its checkpoint, and the entries not yet checked against its tiles. */
async function check(client: HashproofClient, keys: ManifestKey[]): Promise<{ note: string; line: string }> {
  const verifierKey = logKeyOf(keys);
  if (verifierKey === undefined)
    throw new LogCheckError('checkpoint', 'log checkpoint rejected: the key manifest names no log key');
  const memory = logMemory();
  const observation = await memory.observe(await client.checkpoint(), verifierKey, proverOf(client));
  const { checkpoint } = observation;
  const from = (await memory.recall(checkpoint.origin))?.monitoredSize ?? 0;
  const checked = await auditEntries(
    (level, index, width) => client.tile(level, index, width),
    from,
    checkpoint,
  );
  if (checked > 0) await memory.monitored(checkpoint.origin, checkpoint.size);
  return {
    note: checkpoint.note,
    line: `ok   ${checkpoint.origin} ${describeCheckpoint(checkpoint)}: ${growthOf(observation)}; ${checked} new ${checked === 1 ? 'entry matches' : 'entries match'} the tiles`,
  };
}

function growthOf(observation: Observation): string {
  const { growth, previous } = observation;
  if (growth === 'first' || previous === undefined) return 'the first checkpoint seen of this log';
  if (growth === 'same') return 'unchanged';
  if (growth === 'grew') return `consistent with size ${previous.size} seen before`;
  return olderCheckpoint(observation);
}
