import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../../src/platform/node-flags.ts';
import { answers } from '../../../test/process.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** Resolves after `ms` (at once for a time already past). */
export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * The environment of a service under benchmark: a fresh temporary directory for its signing keys and,
 * for `sqlite`, its database file (any other `database`, a postgres:// URL, is used as it is); demo
 * payments. `remove` deletes the directory.
 */
export function benchEnvironment(
  prefix: string,
  database: string,
): {
  env: { DATABASE_URL: string; SIGNING_KEYS_DIR: string; PAYMENT_MODE: string };
  /** The temporary directory itself, for other files of the run. */
  dataDir: string;
  remove: () => void;
} {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return {
    env: {
      DATABASE_URL: database === 'sqlite' ? `sqlite:${path.join(dataDir, 'bench.db')}` : database,
      SIGNING_KEYS_DIR: path.join(dataDir, 'keys'),
      PAYMENT_MODE: 'demo',
    },
    dataDir,
    remove: () => rmSync(dataDir, { recursive: true, force: true }),
  };
}

/**
 * Starts a script of the repository (its path from the repository's root) with the service's Node flags
 * (the baseline gets the same) and any `extraFlags` (`--cpu-prof`). What it writes to standard error is passed on to ours.
 */
export function startProcess(
  script: string,
  env: Record<string, string>,
  extraFlags: string[] = [],
): ChildProcess {
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...extraFlags, path.join(ROOT, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.pipe(process.stderr, { end: false });
  return child;
}

export interface RunningService {
  /** `http://127.0.0.1:<PORT>`. */
  url: string;
  process: ChildProcess;
  /** From the start of the process to its first answer on `/health`, in ms. */
  startupMs: number;
  /** Rejects once the process exits. */
  exited: Promise<never>;
}

/**
 * Starts the service (src/main.ts) on 127.0.0.1 and the `PORT` of `env`, and waits for its first 200 on
 * `/health` (test/process.ts, `answers`: minutes at most, and a process that exits fails the start at
 * once with what it wrote); a service that does not come up is stopped, and the start fails.
 */
export async function startService(
  env: Record<string, string> & { PORT: string },
  extraFlags: string[] = [],
): Promise<RunningService> {
  const url = `http://127.0.0.1:${env.PORT}`;
  const started = performance.now();
  const child = startProcess('src/main.ts', env, extraFlags);
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code) => reject(new Error(`the service exited (${code})`))),
  );
  exited.catch(() => {});
  try {
    // Asked every 10 ms, so the startup figure is that precise.
    await answers(`${url}/health`, child, { intervalMs: 10 });
  } catch (error) {
    child.kill('SIGTERM');
    throw error;
  }
  return { url, process: child, startupMs: performance.now() - started, exited };
}

/** Waits until the service's log checkpoint covers `size` entries. */
export async function waitForLogSize(service: string, size: number): Promise<void> {
  for (;;) {
    const res = await fetch(`${service}/log/checkpoint`);
    if (res.status === 200 && Number((await res.text()).split('\n')[1]) >= size) return;
    await sleep(100);
  }
}
