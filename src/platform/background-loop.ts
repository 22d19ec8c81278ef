import type { Logger } from './log-options.ts';

/**
 * When the next step runs, as a step returns it: after `ms`, or as soon as the loop is nudged. With
 * `holdMs`, nudges that came while the step ran start the next one only `holdMs` after it, and the
 * nudges of that time go with them into that one step (the sequencer does this under load, so that
 * one step integrates the proofs of many commits); without such nudges the loop waits as usual.
 */
export type NextStep = number | { ms: number; holdMs: number };

interface BackgroundLoopOptions {
  /** Names the loop in the line logged when a step fails. */
  name: string;
  /** One unit of work; its answer says when the next one runs. */
  step: () => Promise<NextStep>;
  logger: Logger;
  /**
   * After a step that throws (logged), the next runs `firstMs` later, twice as long after each further
   * failure in a row, at most `maxMs`; a step that succeeds starts the count again. Nudges do not
   * shorten that wait: they say new work came, not that what failed (a database, a peer) is back, and
   * under load they would otherwise turn a failing step into a busy loop of failures and log lines.
   */
  retry: { firstMs: number; maxMs: number };
  /** Whether a waiting loop keeps the process alive (true unless said otherwise). */
  keepsProcessAlive?: boolean;
}

/**
 * A background loop: runs its step again and again, one at a time, waiting between two steps as long
 * as the step asked or until nudged. A nudge while the loop waits wakes it at once; a nudge while a step
 * runs makes the next step start right after that one (nudges in between count as one). `stop` ends the
 * wait, lets the running step finish, and resolves once it has; the loop can be started again.
 */
export class BackgroundLoop {
  readonly #o: BackgroundLoopOptions;
  /** The loop started last; `active` turns false when it is stopped. */
  #current: { active: boolean; done: Promise<void> } | undefined;
  /** A nudge came since the running step started. */
  #isNudged = false;
  /** Ends the current wait; `#wakeOnNudge` says whether a nudge may. */
  #endWait: (() => void) | undefined;
  #wakeOnNudge = false;
  #failures = 0;

  constructor(options: BackgroundLoopOptions) {
    this.#o = options;
  }

  /** Starts the loop (its first step at once); does nothing when it runs already. */
  start(): void {
    if (this.#current?.active) return;
    const run = { active: true, done: Promise.resolve() };
    // A loop stopped but still finishing its step ends first: one step at a time, always.
    const previous = this.#current?.done;
    run.done = (async () => {
      await previous;
      await this.#run(run);
    })();
    this.#current = run;
  }

  /** Something changed: run a step now, or right after the one running. Does nothing when stopped. */
  nudge(): void {
    if (!this.#current?.active) return;
    this.#isNudged = true;
    if (this.#wakeOnNudge) this.#endWait?.();
  }

  /** Stops the loop once its running step, if any, has finished; calling it again changes nothing. */
  async stop(): Promise<void> {
    const run = this.#current;
    if (run === undefined) return;
    run.active = false;
    this.#endWait?.();
    await run.done;
  }

  async #run(run: { active: boolean }): Promise<void> {
    this.#failures = 0;
    while (run.active) {
      this.#isNudged = false;
      const { ms, holdMs, failed } = await this.#step();
      if (!run.active) break;
      if (failed) {
        await this.#wait(ms, false);
        continue;
      }
      if (this.#isNudged) {
        if (holdMs > 0) await this.#wait(holdMs, false);
        continue;
      }
      await this.#wait(ms, true);
    }
  }

  /** Runs the step; one that throws is logged, and the wait before the next grows with each failure. */
  async #step(): Promise<{ ms: number; holdMs: number; failed: boolean }> {
    try {
      const next = await this.#o.step();
      this.#failures = 0;
      return typeof next === 'number' ? { ms: next, holdMs: 0, failed: false } : { ...next, failed: false };
    } catch (error) {
      const { firstMs, maxMs } = this.#o.retry;
      const ms = Math.min(firstMs * 2 ** this.#failures, maxMs);
      this.#failures += 1;
      this.#o.logger.warn(
        { err: error, failures: this.#failures, retryInMs: ms },
        `${this.#o.name}: step failed, retrying`,
      );
      return { ms, holdMs: 0, failed: true };
    }
  }

  /** Waits `ms` (at least 0), or less when stopped or, if `wakeOnNudge`, nudged. */
  async #wait(ms: number, wakeOnNudge: boolean): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, ms));
      if (this.#o.keepsProcessAlive === false) timer.unref();
      this.#wakeOnNudge = wakeOnNudge;
      this.#endWait = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#endWait = undefined;
    this.#wakeOnNudge = false;
  }
}
