import {
  isLineOf,
  parseCosignerKey,
  splitNote,
  verifyCosignature,
  type Cosigner,
} from '../core/cosignature.ts';
import { parseTlogProof } from '../core/tlog-proof.ts';
import type { OfflineCheck } from './offline-check.ts';

/**
 * Witnesses a client requires (docs/verification.md, "Witnesses"): a checkpoint counts only when at
 * least `quorum` of the given witnesses cosigned exactly its text (C2SP tlog-cosignature v1). A
 * cosignature line of a given witness that does not verify rejects the checkpoint (fail closed);
 * lines of other keys are ignored, as C2SP signed-note asks.
 */

/** A witness the client was told to require: its cosigner key and its verifier key as given. */
export interface Witness extends Cosigner {
  vkey: string;
}

export interface WitnessPolicy {
  witnesses: Witness[];
  /** How many of them must have cosigned: 1 to `witnesses.length`. */
  quorum: number;
}

/** A witness option that cannot be used (a malformed key, a quorum out of range). */
export class WitnessPolicyError extends Error {}

/**
 * The policy of `--witness <vkey>`… and `--witness-quorum N` (all the given witnesses when
 * undefined). A key given twice counts once. Throws `WitnessPolicyError`, saying what is wrong.
 */
export function witnessPolicy(vkeys: readonly string[], quorum?: string | number): WitnessPolicy {
  const witnesses: Witness[] = [];
  for (const vkey of vkeys) {
    let cosigner: Cosigner;
    try {
      cosigner = parseCosignerKey(vkey);
    } catch (error) {
      throw new WitnessPolicyError(
        `--witness takes a witness's verifier key <name>+<hex key id>+<base64 of 0x04 and its Ed25519 key> ` +
          `(C2SP tlog-cosignature): ${JSON.stringify(vkey)} is not one (${(error as Error).message})`,
      );
    }
    const same = (w: Witness) => w.name === cosigner.name && w.keyId.equals(cosigner.keyId);
    if (!witnesses.some(same)) witnesses.push({ ...cosigner, vkey });
  }
  if (witnesses.length === 0) {
    if (quorum !== undefined) throw new WitnessPolicyError('--witness-quorum needs --witness <verifier key>');
    return { witnesses, quorum: 0 };
  }
  if (quorum === undefined) return { witnesses, quorum: witnesses.length };
  const n = Number(quorum);
  if (!/^\d+$/.test(String(quorum)) || !Number.isSafeInteger(n) || n < 1 || n > witnesses.length)
    throw new WitnessPolicyError(
      `--witness-quorum takes a whole number from 1 to the number of witnesses given (${witnesses.length}` +
        `${witnesses.length < vkeys.length ? ', a key given twice counting once' : ''}); got ${JSON.stringify(String(quorum))}`,
    );
  return { witnesses, quorum: n };
}

/** What the cosignature lines of a checkpoint say of the witnesses required. */
export interface WitnessCount {
  /** At least `quorum` valid cosignatures, and none that does not verify. */
  met: boolean;
  quorum: number;
  /** The witnesses whose cosignature verifies, each once, with its time (POSIX seconds). */
  cosigned: { witness: Witness; timestamp: number }[];
  /** The witnesses with no cosignature line on it. */
  missing: Witness[];
  /** The witnesses with a line that does not verify (each rejects the checkpoint), and why. */
  bad: { witness: Witness; reason: string }[];
  /** Why the note is not a signed note at all (it then counts nothing). */
  malformed?: string;
}

/** Counts the cosignatures of the required witnesses on a signed checkpoint note. */
export function countCosignatures(note: string, policy: WitnessPolicy): WitnessCount {
  const count: WitnessCount = { met: false, quorum: policy.quorum, cosigned: [], missing: [], bad: [] };
  let split: ReturnType<typeof splitNote>;
  try {
    split = splitNote(note);
  } catch (error) {
    return { ...count, missing: [...policy.witnesses], malformed: (error as Error).message };
  }
  for (const witness of policy.witnesses) {
    let seen = false;
    for (const line of split.lines) {
      if (!isLineOf(line, witness)) continue;
      seen = true;
      try {
        const timestamp = verifyCosignature(split.text, line, witness);
        if (!count.cosigned.some((c) => c.witness === witness)) count.cosigned.push({ witness, timestamp });
      } catch (error) {
        if (!count.bad.some((b) => b.witness === witness))
          count.bad.push({ witness, reason: (error as Error).message });
      }
    }
    if (!seen) count.missing.push(witness);
  }
  // A witness with a line that does not verify is not counted, whatever its other lines say.
  count.cosigned = count.cosigned.filter((c) => !count.bad.some((b) => b.witness === c.witness));
  count.met = count.bad.length === 0 && count.cosigned.length >= policy.quorum;
  return count;
}

/** `name (key id 1a2b3c4d)`, as the checks name a witness. */
export const witnessName = (witness: Cosigner): string =>
  `${witness.name} (key id ${witness.keyId.toString('hex')})`;

const timeOf = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/** The size of a checkpoint note, for a message; '?' when it has none. */
function sizeOf(note: string): string {
  return /^[^\n]*\n(\d+)\n/.exec(note)?.[1] ?? '?';
}

/** One line on the count: what holds, and what is missing or bad. */
export function describeCount(count: WitnessCount, note: string): string {
  const given = count.cosigned.length + count.missing.length + count.bad.length;
  const of = `the checkpoint of size ${sizeOf(note)}`;
  if (count.malformed !== undefined)
    return `Rejected: ${of} is not a well-formed signed note (${count.malformed})`;
  if (count.bad.length > 0)
    return (
      `Rejected: a cosignature on ${of} does not verify: ` +
      count.bad.map((b) => `${witnessName(b.witness)}: ${b.reason}`).join('; ')
    );
  const missing = count.missing.map(witnessName).join(', ');
  if (!count.met)
    return (
      `${count.cosigned.length} of ${given} witnesses cosigned ${of}; ${count.quorum} required; ` +
      `no cosignature by ${missing}`
    );
  return (
    `${count.cosigned.length} of ${given} witnesses cosigned ${of}; ${count.quorum} required` +
    (missing === '' ? '' : ` (none by ${missing})`)
  );
}

/**
 * The checks of a proof file's checkpoint (its tlog-proof's) against the witnesses required: one per
 * witness, then `witnesses`, the one that counts (valid when the quorum is met; invalid when a line
 * of a given witness does not verify; unavailable when too few cosigned or there is no checkpoint).
 * A witness without a cosignature is `unchecked` while the quorum holds without it.
 */
export function witnessChecks(tlogProof: string | undefined, policy: WitnessPolicy): OfflineCheck[] {
  if (policy.witnesses.length === 0) return [];
  let note: string;
  try {
    if (tlogProof === undefined) throw new Error('none');
    note = parseTlogProof(tlogProof).checkpoint;
  } catch {
    return [
      {
        name: 'witnesses',
        status: 'unavailable',
        message:
          tlogProof === undefined
            ? 'The proof file holds no checkpoint of the log to count cosignatures on: hashproof verify --online brings one'
            : 'The proof file holds no readable checkpoint of the log to count cosignatures on',
      },
    ];
  }
  const count = countCosignatures(note, policy);
  const checks: OfflineCheck[] = policy.witnesses.map((witness) => {
    const name = `witness ${witness.name}`;
    const bad = count.bad.find((b) => b.witness === witness);
    if (bad !== undefined)
      return { name, status: 'invalid', message: `Its cosignature does not verify: ${bad.reason}` };
    const cosigned = count.cosigned.find((c) => c.witness === witness);
    if (cosigned !== undefined)
      return {
        name,
        status: 'valid',
        message: `Cosigned the checkpoint of size ${sizeOf(note)} at ${timeOf(cosigned.timestamp)} (key id ${witness.keyId.toString('hex')})`,
      };
    return {
      name,
      status: count.met ? 'unchecked' : 'unavailable',
      message: `No cosignature on the checkpoint of size ${sizeOf(note)}`,
    };
  });
  const status = count.met
    ? 'valid'
    : count.bad.length > 0 || count.malformed !== undefined
      ? 'invalid'
      : 'unavailable';
  checks.push({ name: 'witnesses', status, message: describeCount(count, note) });
  return checks;
}
