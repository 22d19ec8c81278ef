/**
 * The service the command-line tests talk to, and the command itself: a test file calls
 * `withCliServer()` once; `server` and `work` (a scratch directory for files to stamp) are set for its tests.
 */
import { after, before } from 'node:test';
import path from 'node:path';
import { ADMIN_KEY, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import { run, type Run } from '../../test/process.ts';

export const CLI = path.join(import.meta.dirname, 'main.ts');

export let server: TestServer;
export let work: string;

/** Starts the service and makes the scratch directory before the file's tests; stops the service after. */
export function withCliServer(): void {
  before(async () => {
    // Webhooks may point at the test's own receiver on loopback.
    server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
    work = makeDataDir();
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });
}

/**
 * Runs `hashproof` with these arguments against the test service, as a user's shell would. The
 * checkpoints it remembers go to the scratch directory (HASHPROOF_STATE_DIR), never to the home directory.
 */
export function cli(
  args: string[],
  options: { stdin?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  return run(process.execPath, [CLI, ...args], {
    env: {
      PATH: process.env.PATH,
      HASHPROOF_URL: server.baseUrl,
      HASHPROOF_STATE_DIR: path.join(work, '.hashproof-state'),
      ...options.env,
    },
    stdin: options.stdin,
  });
}
