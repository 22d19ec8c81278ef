import { attachToWorkerHost } from '../platform/worker-host.ts';

/**
 * Copies the write-ahead log back into the database file on the process's background thread
 * (`platform/worker-host.ts`), with a connection of its own, so the request thread never does that work
 * (a checkpoint writes every changed page and syncs the file twice). The service's connection runs with
 * `wal_autocheckpoint = 0`; meanwhile SQLite's PASSIVE checkpoint goes as far as readers allow without
 * blocking anyone, and the next write starts the log over once everything in it is copied.
 */
interface Checkpointer {
  /** Runs a last checkpoint and closes the thread's connection. */
  stop(): Promise<void>;
  /** The id of the thread that checkpoints (shared with the other background work). */
  readonly threadId: number;
}

/**
 * Starts checkpointing `file` every `intervalMs`. `onProblem` hears a checkpoint that failed (it is
 * tried again at the next interval) or a thread that stopped on its own; in the second case the caller
 * should let SQLite checkpoint on its own connection again.
 */
export function startCheckpointer(
  file: string,
  onProblem: (message: string, stopped: boolean) => void,
  intervalMs = 250,
): Checkpointer {
  let stopping = false;
  let gone = false;
  let stopped: (() => void) | undefined;
  const thread = attachToWorkerHost(
    (message) => {
      const error = typeof message.error === 'string' ? message.error : 'the checkpoints stopped';
      if (message.stopped === true) {
        if (stopping) stopped?.();
        else onProblem(error, true);
      } else onProblem(error, false);
    },
    (error) => {
      gone = true;
      if (stopping) stopped?.();
      else onProblem(error.message, true);
    },
  );
  thread.post({ role: 'checkpointStart', file, intervalMs });
  return {
    threadId: thread.threadId,
    stop: async () => {
      if (stopping) return;
      stopping = true;
      if (gone) return;
      // Keep the process alive until the last checkpoint is done (the thread is otherwise unref'd).
      thread.ref();
      const done = new Promise<void>((resolve) => (stopped = resolve));
      thread.post({ role: 'checkpointStop' });
      await done;
      thread.detach();
    },
  };
}
