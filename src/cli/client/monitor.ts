import { setTimeout as pause } from 'node:timers/promises';
import {
  auditEntries,
  countCosignatures,
  describeCheckpoint,
  describeCount,
  HashproofError,
  LogCheckError,
  LogUncheckedError,
  logKeyOf,
  type HashproofClient,
  type ManifestKey,
  type Observation,
  type WitnessPolicy,
} from '../../client/client.ts';
import { logMemory, olderCheckpoint, proverOf } from './log-memory.ts';
import { escapeControl, EXIT, printSafe, UsageError } from '../output.ts';
import { pinnedKeys, servedKeys } from './trusted-keys.ts';
import { witnessesOf, WitnessQuorumError, type WitnessValues } from './witnesses.ts';

const DEFAULT_INTERVAL_MS = 60_000;
/** Entries checked against the tiles in one pass: the memory and time of a pass stay bounded. */
const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * `hashproof monitor [--once] [--interval-ms N]`: follows the service's log. For each new checkpoint it
 * checks the signature (with the log key of the trusted manifest), the consistency with the checkpoint
 * remembered, and the entries added since the last check against the tiles, which must hash to the
 * checkpoint's root (docs/cli.md). Prints one line per checkpoint checked; exits 1 at the first failure.
 */
export async function monitor(
  client: HashproofClient,
  values: { once?: boolean; 'interval-ms'?: string; 'max-entries'?: string; keys?: string } & WitnessValues,
): Promise<number> {
  if (values['witness-wait'] !== undefined)
    throw new UsageError(
      '--witness-wait is for stamp and verify --online: monitor looks again every --interval-ms',
    );
  const witnesses = witnessesOf(values);
  // The log key of a saved manifest (--keys), else of the service's.
  const pinned = values.keys;
  const keysOf = async () => (pinned === undefined ? servedKeys(client) : (await pinnedKeys(pinned)).keys);
  const interval = wholeNumber(values['interval-ms'], '--interval-ms', DEFAULT_INTERVAL_MS);
  const maxEntries = wholeNumber(values['max-entries'], '--max-entries', DEFAULT_MAX_ENTRIES);
  let lastShown: string | undefined;
  for (;;) {
    try {
      const { note, line } = await check(client, await keysOf(), maxEntries, witnesses);
      if (values.once || note !== lastShown) printSafe(line);
      lastShown = note;
    } catch (error) {
      // Following a log outlives an outage of the service; what the log served never goes unnoticed.
      // A checkpoint without the witnesses' quorum is not counted (yet): looked at again later.
      const isOutage =
        (error instanceof HashproofError && error.couldNotCheck) ||
        error instanceof LogUncheckedError ||
        error instanceof WitnessQuorumError;
      if (values.once || !isOutage) throw error;
      process.stderr.write(`hashproof: ${escapeControl(error.message)}; looking again in ${interval} ms\n`);
    }
    if (values.once) return EXIT.ok;
    await pause(interval);
  }
}

/** A whole number above 0 given as an option, or its default. */
function wholeNumber(raw: string | undefined, option: string, byDefault: number): number {
  const value = raw === undefined ? byDefault : Number(raw);
  if (!/^\d+$/.test(raw ?? '1') || !Number.isSafeInteger(value) || value < 1)
    throw new UsageError(`${option} takes a whole number above 0, got ${JSON.stringify(raw)}`);
  return value;
}

/**
 * One look at the log: its checkpoint, and at most `maxEntries` of the entries not yet checked against
 * its tiles (the tree of those checked then proved a prefix of the checkpoint's).
 */
async function check(
  client: HashproofClient,
  keys: ManifestKey[],
  maxEntries: number,
  witnesses?: WitnessPolicy,
): Promise<{ note: string; line: string }> {
  const verifierKey = logKeyOf(keys);
  if (verifierKey === undefined)
    throw new LogCheckError('checkpoint', 'log checkpoint rejected: the key manifest names no log key');
  const memory = logMemory();
  const prove = proverOf(client);
  const note = await (witnesses === undefined
    ? client.checkpoint()
    : client.witnessedCheckpoint(witnesses.quorum));
  // With witnesses, only a checkpoint their quorum cosigned counts: one without it is not looked into.
  const count = witnesses === undefined ? undefined : countCosignatures(note, witnesses);
  if (count !== undefined && (count.bad.length > 0 || count.malformed !== undefined))
    throw new LogCheckError('checkpoint', `log checkpoint rejected: ${describeCount(count, note)}`);
  if (count !== undefined && !count.met)
    throw new WitnessQuorumError(`checkpoint not counted: ${describeCount(count, note)}`);
  const observation = await memory.observe(note, verifierKey, prove);
  const { checkpoint } = observation;
  const from = (await memory.recall(checkpoint.origin))?.monitoredSize ?? 0;
  const checked = await auditEntries(
    (level, index, width) => client.tile(level, index, width),
    from,
    checkpoint,
    { maxEntries, prove },
  );
  if (checked > 0) await memory.monitored(checkpoint.origin, from + checked);
  const left = checkpoint.size - from - checked;
  return {
    // A pass that left entries is shown again, with what it checked.
    note: left > 0 ? `${checkpoint.note}\n${from + checked}` : checkpoint.note,
    line:
      `ok   ${checkpoint.origin} ${describeCheckpoint(checkpoint)}: ${growthOf(observation)}; ` +
      `${checked} new ${checked === 1 ? 'entry matches' : 'entries match'} the tiles` +
      (left > 0 ? `; ${left} left for the next pass (--max-entries ${maxEntries})` : '') +
      (count === undefined ? '' : `; ${describeCount(count, note)}`),
  };
}

function growthOf(observation: Observation): string {
  const { growth, previous } = observation;
  if (growth === 'first' || previous === undefined) return 'the first checkpoint seen of this log';
  if (growth === 'same') return 'unchanged';
  if (growth === 'grew') return `consistent with size ${previous.size} seen before`;
  return olderCheckpoint(observation);
}
