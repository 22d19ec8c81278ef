import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS } from '../../platform/node-flags.ts';

/** `hashproof serve`: the service as a child process, with the flags of `npm start` (platform/node-flags.ts). */
export async function serve(values: { port?: string; database?: string; mode?: string }): Promise<number> {
  const env = { ...process.env };
  if (values.port) env.PORT = values.port;
  if (values.database) env.DATABASE_URL = values.database;
  if (values.mode) env.PAYMENT_MODE = values.mode;
  // main.ts beside the sources, main.js in the compiled package.
  const entry = path.join(import.meta.dirname, '..', '..', 'main' + path.extname(import.meta.filename));
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, entry], {
    env,
    stdio: 'inherit',
  });
  // This command stands for the service (Node cannot replace itself with it, as a shell's exec does):
  // a signal sent to it is passed on, and it ends the way the service ended, so nothing is left running.
  // SIGHUP ends neither: the service reads its signing keys again (docs/operations.md).
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  for (const signal of signals) process.on(signal, forward);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      process.stderr.write(`hashproof: cannot start the service: ${error.message}\n`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      for (const name of signals) process.off(name, forward);
      if (signal === null) return resolve(code ?? 1);
      process.kill(process.pid, signal);
      // Reached only if that signal does not end this process: the shell's way of saying it.
      resolve(128 + (constants.signals[signal] ?? 0));
    });
  });
}
