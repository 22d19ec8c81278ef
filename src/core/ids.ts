import { monotonicFactory } from 'ulid';

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
/**
 * A proof id: `proof_` and a ULID. Unanchored, to find one inside a link as well; `^…$` matches a
 * whole string.
 */
export const PROOF_ID_PATTERN = `proof_${ULID}`;
const PROOF_ID = new RegExp(`^${PROOF_ID_PATTERN}$`);

/** Identifier prefixes: one per resource, so an id says what it names. */
type IdPrefix = 'proof' | 'acct' | 'key' | 'wh' | 'evt' | 'task' | 'dlv';

export interface IdGenerator {
  /** A new id `<prefix>_<ULID>`; ids made by one generator sort by creation time, even within a millisecond. */
  next(prefix: IdPrefix, timeMs: number): string;
}

export function createIdGenerator(): IdGenerator {
  const ulid = monotonicFactory(pooledRandom());
  return { next: (prefix, timeMs) => `${prefix}_${ulid(timeMs)}` };
}

/**
 * The random source of the ULIDs: the system's CSPRNG, read 4 KiB at a time (the library asks for one
 * byte per character, and a system call per byte cost more than the rest of the id). Each byte / 256
 * picks one of 32 characters uniformly.
 */
function pooledRandom(): () => number {
  const pool = new Uint8Array(4096);
  let next = pool.length;
  return () => {
    if (next === pool.length) {
      crypto.getRandomValues(pool);
      next = 0;
    }
    return (pool[next++] as number) / 256;
  };
}

export function isProofId(value: string): boolean {
  return PROOF_ID.test(value);
}

/**
 * Whether `value` could be an id this service issued (letters, digits and `_`). Anything else cannot
 * name a stored resource, so lookups answer "not found" without asking the database (which may refuse
 * such text outright: PostgreSQL rejects NUL bytes).
 */
export function isPlausibleId(value: string): boolean {
  return /^[A-Za-z0-9_]{1,100}$/.test(value);
}
