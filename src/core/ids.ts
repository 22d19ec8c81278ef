import { monotonicFactory } from 'ulid';

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const PROOF_ID_PATTERN = new RegExp(`^proof_${ULID}$`);

/** Identifier prefixes: one per resource, so an id says what it names. */
export type IdPrefix = 'proof' | 'acct' | 'key' | 'wh' | 'evt' | 'task' | 'dlv';

export interface IdGenerator {
  /** A new id `<prefix>_<ULID>`; ids made by one generator sort by creation time, even within a millisecond. */
  next(prefix: IdPrefix, timeMs: number): string;
}

export function createIdGenerator(): IdGenerator {
  const ulid = monotonicFactory();
  return { next: (prefix, timeMs) => `${prefix}_${ulid(timeMs)}` };
}

export function isProofId(value: string): boolean {
  return PROOF_ID_PATTERN.test(value);
}

export const ULID_PATTERN_SOURCE = ULID;
