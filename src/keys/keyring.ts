import { mkdirSync } from 'node:fs';
import {
  readHmacKeys,
  readLogKey,
  readReceiptKeys,
  writeHmacKey,
  writeReceiptKey,
  type HmacKey,
  type LogKey,
  type ReceiptKey,
} from './key-files.ts';

export type { LogKey } from './key-files.ts';

/** Where the service publishes its public keys (receipt, log, TSA), for offline checks. */
export const KEYS_MANIFEST_PATH = '/.well-known/hashproof-keys.json';

/** The keys a new proof is signed with: both chosen at the proof's own time. */
export interface SigningKeys {
  hmac: HmacKey;
  receipt: ReceiptKey;
}

/**
 * The service's signing keys, persisted in a directory so proofs verify after a restart.
 * A key signs from its `createdAt` until the next one's; every key ever created still verifies (rotation
 * adds a key, never removes one). Several instances may share the directory: a key id this process has
 * not seen makes it read the directory again before it gives up, and `reload` (SIGHUP) reads it whole.
 */
export class Keyring {
  readonly #dir: string;
  /** Both lists are replaced whole, never changed in place: a request keeps the keys it took. */
  #hmacKeys: HmacKey[];
  #receiptKeys: ReceiptKey[];
  #logKey: LogKey | undefined;

  private constructor(dir: string) {
    this.#dir = dir;
    this.#hmacKeys = nonEmpty(readHmacKeys(dir), 'HMAC', dir);
    this.#receiptKeys = nonEmpty(readReceiptKeys(dir), 'receipt', dir);
  }

  /** Loads every key in `dir`, creating the directory and first keys when there are none. */
  static open(dir: string): Keyring {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (readHmacKeys(dir).length === 0) writeHmacKey(dir, new Date());
    if (readReceiptKeys(dir).length === 0) writeReceiptKey(dir, new Date());
    return new Keyring(dir);
  }

  /** Loads the keys of `dir` and creates none: fails when it holds no HMAC or no receipt key. */
  static load(dir: string): Keyring {
    return new Keyring(dir);
  }

  /**
   * Reads the directory again: keys another instance or `hashproof keys rotate` added are known, and
   * sign from their own time on. The lists are swapped in one step; a request in flight finishes with
   * the keys it took.
   */
  reload(): void {
    const hmacKeys = nonEmpty(readHmacKeys(this.#dir), 'HMAC', this.#dir);
    const receiptKeys = nonEmpty(readReceiptKeys(this.#dir), 'receipt', this.#dir);
    this.#hmacKeys = hmacKeys;
    this.#receiptKeys = receiptKeys;
  }

  /** The keys that sign a proof made at `at` (ms): the newest of each kind whose time has come. */
  signingKeys(at: number): SigningKeys {
    return { hmac: current(this.#hmacKeys, at), receipt: current(this.#receiptKeys, at) };
  }

  /** The receipt key that signs new proofs now. */
  get activeReceiptKey(): ReceiptKey {
    return current(this.#receiptKeys, Date.now());
  }

  /** Every receipt key, oldest first, with its validity window. */
  receiptKeys(): ReceiptKey[] {
    return [...this.#receiptKeys];
  }

  findReceiptKey(keyId: string): ReceiptKey | undefined {
    const known = this.#receiptKeys.find((k) => k.keyId === keyId);
    if (known !== undefined) return known;
    this.#receiptKeys = nonEmpty(readReceiptKeys(this.#dir), 'receipt', this.#dir);
    return this.#receiptKeys.find((k) => k.keyId === keyId);
  }

  /**
   * The transparency log's Ed25519 key: it signs every checkpoint. One key for the life of the log (a
   * verifier pins it), created on first use; instances sharing the directory share it.
   */
  get logKey(): LogKey {
    this.#logKey ??= readLogKey(this.#dir, true)!;
    return this.#logKey;
  }

  /** The HMAC key that signs new proofs now. */
  get active(): HmacKey {
    return current(this.#hmacKeys, Date.now());
  }

  /** The key with this id, or undefined when no instance sharing the directory ever made it. */
  find(keyId: string): HmacKey | undefined {
    const known = this.#hmacKeys.find((k) => k.keyId === keyId);
    if (known !== undefined) return known;
    this.#hmacKeys = nonEmpty(readHmacKeys(this.#dir), 'HMAC', this.#dir);
    return this.#hmacKeys.find((k) => k.keyId === keyId);
  }

  /**
   * Adds new keys (HMAC and receipt) that sign from `from` on (now when absent); older keys keep
   * verifying what they signed. `from` must be later than every key of the directory.
   */
  rotate(from: Date = new Date()): SigningKeys {
    const latest = [...this.#hmacKeys, ...this.#receiptKeys]
      .map((k) => k.createdAt)
      .sort()
      .at(-1)!;
    if (from.toISOString() <= latest)
      throw new Error(`new keys must sign from a time after the newest key's (${latest})`);
    const hmacId = writeHmacKey(this.#dir, from);
    const receiptId = writeReceiptKey(this.#dir, from);
    this.reload();
    return {
      hmac: this.#hmacKeys.find((k) => k.keyId === hmacId)!,
      receipt: this.#receiptKeys.find((k) => k.keyId === receiptId)!,
    };
  }

  /** Every HMAC key, oldest first, with its validity window. */
  list(): HmacKey[] {
    return [...this.#hmacKeys];
  }
}

function nonEmpty<T>(keys: T[], kind: string, dir: string): T[] {
  if (keys.length === 0) throw new Error(`no ${kind} key in ${dir} (hashproof keys init creates them)`);
  return keys;
}

/** The newest key created at or before `at`; the oldest when all are younger (a clock set back). */
function current<T extends { createdAt: string }>(keys: T[], at: number): T {
  const time = new Date(at).toISOString();
  let chosen = keys[0]!;
  for (const key of keys) if (key.createdAt <= time) chosen = key;
  return chosen;
}
