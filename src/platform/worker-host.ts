import { Worker } from 'node:worker_threads';

/**
 * One worker thread for all of the process's background work: public-key signatures
 * (`signing-thread.ts`) and SQLite checkpoints (`db/sqlite-checkpointer.ts`). Each thread holds a
 * V8 isolate and a Node environment of its own, about 20 MB, so the two share one. A checkpoint blocks
 * the thread while it copies pages and syncs the database file; signatures asked for meanwhile wait
 * that long (a few milliseconds), which the request thread does not notice.
 *
 * Each user attaches as a client: its messages carry its number and the thread's answers come back to
 * it alone. The thread ends when the last client detaches; should it fail, every client hears it and
 * the next client to attach starts a new one.
 *
 * The thread's code is inline: a worker file would need a path that differs between sources and build.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { sign } = require('node:crypto');
const { DatabaseSync } = require('node:sqlite');
const keys = new Map();
const checkpoints = new Map();
const describe = (error) => String((error && error.message) || error);
const checkpoint = (client, db) => {
  try {
    db.exec('PRAGMA wal_checkpoint(PASSIVE)');
  } catch (error) {
    parentPort.postMessage({ client, error: describe(error) });
  }
};
const roles = {
  sign({ client, register, batch }) {
    for (const [name, key] of register) keys.set(name, key);
    parentPort.postMessage({ client, signatures: batch.map(([name, algorithm, data]) => {
      try {
        return sign(algorithm, data, keys.get(name));
      } catch (error) {
        return describe(error);
      }
    }) });
  },
  forget({ names }) {
    for (const name of names) keys.delete(name);
  },
  checkpointStart({ client, file, intervalMs }) {
    try {
      const db = new DatabaseSync(file);
      db.exec('PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL;');
      checkpoints.set(client, { db, timer: setInterval(() => checkpoint(client, db), intervalMs) });
    } catch (error) {
      parentPort.postMessage({ client, error: describe(error), stopped: true });
    }
  },
  checkpointStop({ client }) {
    const running = checkpoints.get(client);
    if (running !== undefined) {
      checkpoints.delete(client);
      clearInterval(running.timer);
      checkpoint(client, running.db);
      running.db.close();
    }
    parentPort.postMessage({ client, stopped: true });
  },
};
parentPort.on('message', (message) => roles[message.role](message));
`;

export interface HostClient {
  /** Sends a message to the thread, for the role it names. */
  post(message: { role: string; [field: string]: unknown }): void;
  /** Keeps the process alive until `unref` (the thread alone does not). */
  ref(): void;
  unref(): void;
  /** Stops hearing from the thread; the thread ends when no client is left. */
  detach(): void;
  /** The thread's id (the same for every client attached to one thread). */
  readonly threadId: number;
}

interface Host {
  worker: Worker;
  clients: Map<number, Listener>;
  refs: number;
  failed: boolean;
}

interface Listener {
  onMessage: (message: Record<string, unknown>) => void;
  onFailure: (error: Error) => void;
}

let host: Host | undefined;
let nextClient = 0;

function startHost(): Host {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    // It holds keys, a few signatures at a time and a connection: a small heap keeps memory down.
    resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 32 },
  });
  worker.unref();
  const started: Host = { worker, clients: new Map(), refs: 0, failed: false };
  worker.on('message', (message: { client: number }) =>
    started.clients.get(message.client)?.onMessage(message),
  );
  const fail = (error: Error) => {
    if (started.failed) return;
    started.failed = true;
    if (host === started) host = undefined;
    for (const listener of [...started.clients.values()]) listener.onFailure(error);
    started.clients.clear();
  };
  worker.on('error', fail);
  worker.on('exit', () => fail(new Error('the background thread stopped')));
  return started;
}

/** Attaches to the process's background thread, starting it if needed. */
export function attachToWorkerHost(
  onMessage: Listener['onMessage'],
  onFailure: Listener['onFailure'],
): HostClient {
  host ??= startHost();
  const current = host;
  const client = ++nextClient;
  current.clients.set(client, { onMessage, onFailure });
  let refs = 0;
  const unref = () => {
    if (refs === 0) return;
    refs--;
    if (--current.refs === 0) current.worker.unref();
  };
  return {
    threadId: current.worker.threadId,
    post: (message) => {
      if (!current.failed) current.worker.postMessage({ ...message, client });
    },
    ref: () => {
      refs++;
      if (current.refs++ === 0) current.worker.ref();
    },
    unref,
    detach: () => {
      while (refs > 0) unref();
      if (!current.clients.delete(client)) return;
      if (current.clients.size === 0 && !current.failed) {
        current.failed = true;
        if (host === current) host = undefined;
        void current.worker.terminate();
      }
    },
  };
}
