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
 * Resolves with what the command has printed (standard output and error) since the call, once that holds
 * `text`; fails should the command end first. Call it before whatever makes the command print the text.
 */
export function printed(child: ChildProcess, text: string, timeoutMs = 30_000): Promise<string> {
  let output = '';
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  const read = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes(text)) resolve(output);
  };
  const ended = (code: number | null, signal: NodeJS.Signals | null) =>
    reject(new Error(`the command ended (${code ?? signal}) before printing ${text}:\n${output}`));
  child.stdout?.on('data', read);
  child.stderr?.on('data', read);
  child.once('close', ended);
  const waiting = within(promise, {
    what: `the command prints ${text}`,
    timeoutMs,
    seen: () => output,
  }).finally(() => {
    child.stdout?.off('data', read);
    child.stderr?.off('data', read);
    child.off('close', ended);
  });
  // A test that fails before awaiting it leaves no unhandled rejection behind.
  waiting.catch(() => {});
  return waiting;
}

/** The service's line once it listens and its background work has started. */
const SERVING = 'hashproof is serving';

/** Resolves with the `GET /health` body once a started service has said it is serving. */
export async function serving(child: ChildProcess, baseUrl: string): Promise<Record<string, unknown>> {
  await printed(child, SERVING);
  return (await (await fetch(`${baseUrl}/health`)).json()) as Record<string, unknown>;
}

/**
 * For a service whose output says nothing (it logs only warnings, or nobody reads its output): polls
 * `GET /health` until it answers 200, failing at once should the process exit.
 */
export async function healthy(baseUrl: string, child: ChildProcess, output = () => ''): Promise<void> {
  await eventually(
    async () => {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the service exited during start:\n${output()}`);
      return fetch(`${baseUrl}/health`).then(
        async (response) => (await response.arrayBuffer(), response.ok),
        () => false, // not listening yet
      );
    },
    { what: `${baseUrl}/health answers 200`, timeoutMs: 60_000 },
  );
}
