import { setTimeout as pause } from 'node:timers/promises';
import { inspect } from 'node:util';

export interface WaitOptions {
  /** What is awaited, as the failure says it: "the proof enters the log". */
  what: string;
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** A value as a failure message shows it: one line, bounded. */
function shown(value: unknown): string {
  const text = inspect(value, { depth: 3, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 300 });
  return text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text;
}

/**
 * Resolves as `event` does, or fails once `timeoutMs` have passed, saying what was awaited and, with
 * `seen`, the state it was last in.
 */
export async function within<T>(
  event: Promise<T>,
  { what, timeoutMs = DEFAULT_TIMEOUT_MS, seen }: WaitOptions & { seen?: () => unknown },
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const state = seen === undefined ? '' : `; last seen: ${shown(seen())}`;
      reject(new Error(`${what}: not within ${timeoutMs} ms${state}`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([event, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * For state that says nothing when it changes (a resource a background loop or another process
 * updates): reads it until `until` holds (by default, until the reading is truthy) and returns that
 * reading. Fails once `timeoutMs` have passed with what was awaited and the last reading; an error
 * thrown by `read` fails at once.
 */
export async function eventually<T>(
  read: () => T | Promise<T>,
  options: WaitOptions & { until?: (value: T) => boolean; intervalMs?: number },
): Promise<T> {
  const { what, timeoutMs = DEFAULT_TIMEOUT_MS, until = Boolean, intervalMs = 25 } = options;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (until(value)) return value;
    if (performance.now() >= deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms; last seen: ${shown(value)}`);
    await pause(intervalMs);
  }
}

/** Things that arrive one at a time (requests, log lines), kept in order, which a test can wait for. */
export class Arrivals<T> {
  readonly items: T[] = [];
  readonly #watchers = new Set<() => void>();

  add(item: T): void {
    this.items.push(item);
    for (const watcher of [...this.#watchers]) watcher();
  }

  /** Resolves with every item so far once `enough(items)` holds: at once, or at the arrival that makes it. */
  until(enough: (items: T[]) => boolean, options: WaitOptions): Promise<T[]> {
    const { promise, resolve, reject } = Promise.withResolvers<T[]>();
    const watcher = () => {
      try {
        if (enough(this.items)) resolve(this.items);
      } catch (error) {
        reject(error);
      }
    };
    this.#watchers.add(watcher);
    watcher();
    const seen = () => `${this.items.length} arrived`;
    return within(promise, { ...options, seen }).finally(() => this.#watchers.delete(watcher));
  }
}
