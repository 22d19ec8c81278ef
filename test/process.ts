import { spawn, type ChildProcess } from 'node:child_process';
import { eventually, within } from './wait.ts';

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  /** The whole environment of the command (the test's own when absent). */
  env?: NodeJS.ProcessEnv;
  /** Written to standard input, which is then closed (closed at once when absent). */
  stdin?: string;
  /** In a process group of its own, so `killGroup` reaches whatever it left running. */
  detached?: boolean;
}

/** Runs a command to its end, collecting its output, as a shell would run it with pipes. */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<Run> {
  return finished(start(command, args, options));
}

/** Starts a command with pipes; `finished` collects its output until it exits. */
export function start(command: string, args: string[], options: RunOptions = {}): ChildProcess {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  // A command that exits without reading its input closes the pipe: EPIPE then is no failure.
  child.stdin?.on('error', () => {});
  child.stdin?.end(options.stdin ?? '');
  return child;
}

/** Kills every process left in the group of a command started `detached` (nothing, when all is well). */
export function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // no process left in the group
  }
}

export function finished(child: ChildProcess): Promise<Run> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * How long a started process may take to be ready. Minutes, not seconds: on a machine busy with other
 * work (a CI runner shares two cores with everything else), starting Node, opening the database and
 * making keys can take far longer than on a quiet one. A process that fails to start does not make
 * anyone wait this long: it exits, and the wait fails at once with what it wrote.
 */
export const START_TIMEOUT_MS = 5 * 60_000;

/** The end of what a command wrote, enough to see why it stopped. */
const tail = (output: string): string => (output.length > 4_000 ? `…${output.slice(-4_000)}` : output);

/**
 * Resolves as `event` does; fails at once should the command end first, with the end of what it printed
 * (standard output and error) since the call, or once `timeoutMs` have passed. `heard` is told of
 * everything printed so far at each new chunk.
 */
function whileRunning<T>(
  child: ChildProcess,
  event: Promise<T>,
  { what, timeoutMs, heard }: { what: string; timeoutMs: number; heard?: (output: string) => void },
): Promise<T> {
  let output = '';
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    heard?.(output);
  };
  const { promise: ended, reject } = Promise.withResolvers<never>();
  const stopped = (code: number | null, signal: NodeJS.Signals | null) =>
    reject(new Error(`the command ended (${code ?? signal}) before ${what}:\n${tail(output)}`));
  child.stdout?.on('data', read);
  child.stderr?.on('data', read);
  // Ended already, its output read to the end: no 'close' event is coming.
  const exited = child.exitCode !== null || child.signalCode !== null;
  const drained = [child.stdout, child.stderr].every(
    (stream) => !stream || stream.readableEnded || stream.destroyed,
  );
  if (exited && drained) stopped(child.exitCode, child.signalCode);
  else child.once('close', stopped);
  const waiting = within(Promise.race([event, ended]), { what, timeoutMs, seen: () => tail(output) }).finally(
    () => {
      child.stdout?.off('data', read);
      child.stderr?.off('data', read);
      child.off('close', stopped);
    },
  );
  // A test that fails before awaiting it leaves no unhandled rejection behind.
  for (const promise of [waiting, event, ended]) promise.catch(() => {});
  return waiting;
}

/**
 * Resolves with what the command has printed (standard output and error) since the call, once that holds
 * `text`; fails should the command end first. Call it before whatever makes the command print the text.
 * The default bound suits an event of a running command; a start waits for START_TIMEOUT_MS.
 */
export function printed(child: ChildProcess, text: string, timeoutMs = 30_000): Promise<string> {
  const { promise, resolve } = Promise.withResolvers<string>();
  const heard = (output: string) => {
    if (output.includes(text)) resolve(output);
  };
  return whileRunning(child, promise, { what: `the command prints ${text}`, timeoutMs, heard });
}

/** The service's line once it listens and its background work has started. */
const SERVING = 'hashproof is serving';

/** Resolves with the `GET /health` body once a started service has said it is serving. */
export async function serving(child: ChildProcess, baseUrl: string): Promise<Record<string, unknown>> {
  await printed(child, SERVING, START_TIMEOUT_MS);
  return (await (await fetch(`${baseUrl}/health`)).json()) as Record<string, unknown>;
}

/**
 * For a started process that says nothing when it is ready (or whose output nobody reads): polls `url`
 * (with `init`, for a request other than GET) every `intervalMs` until it answers 200. Fails at once
 * should the process end first, with the end of what it printed; gives up after START_TIMEOUT_MS.
 */
export async function answers(
  url: string,
  child: ChildProcess,
  { init, intervalMs }: { init?: RequestInit; intervalMs?: number } = {},
): Promise<void> {
  const what = `${url} answers 200`;
  let settled = false;
  const polled = eventually(
    async () =>
      settled ||
      fetch(url, init).then(
        async (response) => (await response.arrayBuffer(), response.ok),
        () => false, // not listening yet
      ),
    { what, timeoutMs: START_TIMEOUT_MS, intervalMs },
  );
  try {
    await whileRunning(child, polled, { what, timeoutMs: START_TIMEOUT_MS });
  } finally {
    settled = true; // the polling stops at its next reading
  }
}

/** Resolves once a started service answers 200 on `GET /health`, failing at once should it end. */
export function healthy(baseUrl: string, child: ChildProcess): Promise<void> {
  return answers(`${baseUrl}/health`, child);
}
