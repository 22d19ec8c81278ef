import { Worker } from 'node:worker_threads';

/**
 * Copies the write-ahead log back into the database file on a thread of its own, with its own
 * connection, so the request thread never does that work (a checkpoint writes every changed page and
 * syncs the file twice). The service's connection runs with `wal_autocheckpoint = 0`; while this
 * thread runs, SQLite's PASSIVE checkpoint goes as far as readers allow without blocking anyone, and
 * the next write starts the log over once everything in it is copied.
 *
 * The thread's code is inline (a worker file would need a path that differs between sources and a
 * build).
 */
const WORKER_SOURCE = `
const { DatabaseSync } = require('node:sqlite');
const { parentPort, workerData } = require('node:worker_threads');
const db = new DatabaseSync(workerData.file);
db.exec('PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL;');
const checkpoint = () => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export interface Checkpointer {
  /** Runs a last checkpoint and ends the thread. */
  stop(): Promise<void>;
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
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, intervalMs },
    resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 32 },
  });
  let stopping = false;
  worker.on('message', (message: { error: string }) => onProblem(message.error, false));
  worker.on('error', (error: Error) => onProblem(error.message, true));
  worker.on('exit', () => {
    if (!stopping) onProblem('the checkpoint thread stopped', true);
  });
  worker.unref();
  return {
    stop: async () => {
      if (stopping) return;
      stopping = true;
      // Keep the process alive until the last checkpoint is done (the thread is otherwise unref'd).
      worker.ref();
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage('stop');
      await exited;
    },
  };
}
