import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import path from 'node:path';
import { freePort, testDatabaseUrl } from './helper.ts';
import { healthy } from './process.ts';

const MAIN = path.resolve(import.meta.dirname, '../src/main.ts');

/** The PostgreSQL that several instances share: the suites' own, or the local one. */
export const POSTGRES_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** A PostgreSQL schema of its own for a data directory, whatever database the other suites run on. */
export async function postgresSchema(dataDir: string): Promise<string> {
  const previous = process.env.TEST_DATABASE_URL;
  process.env.TEST_DATABASE_URL = POSTGRES_URL;
  try {
    return await testDatabaseUrl(dataDir);
  } finally {
    if (previous === undefined) delete process.env.TEST_DATABASE_URL;
    else process.env.TEST_DATABASE_URL = previous;
  }
}

export interface Instance {
  baseUrl: string;
  child: ChildProcess;
  output(): string;
  /** Sends a signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts one real service process (`node src/main.ts`) and waits until /health answers 200. */
export async function startInstance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const instance: Instance = {
    baseUrl,
    child,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = (await once(child, 'exit')) as [number | null];
      return code;
    },
  };
  try {
    await healthy(baseUrl, child);
  } catch (error) {
    await instance.stop('SIGKILL');
    throw error;
  }
  return instance;
}

/** Starts `count` instances together, as a rollout would; should one fail to start, stops the others. */
export async function startInstances(count: number, env: Record<string, string>): Promise<Instance[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => startInstance(env)));
  const instances = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = started.find((result) => result.status === 'rejected');
  if (failed === undefined) return instances;
  await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
  throw failed.reason;
}

/** A POST on a connection of its own (no keep-alive pool), so no request rides a socket of a dead process. */
export function postOnFreshConnection(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', () => resolve(undefined));
        // A connection cut in the middle of the answer (the instance was killed) ends without 'end'.
        res.on('close', () => {
          if (!res.complete) resolve(undefined);
        });
      },
    );
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}
