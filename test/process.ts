import { spawn, type ChildProcess } from 'node:child_process';

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

/** Polls `GET /health` until the service answers 200 (or the time runs out), and returns its body. */
export async function waitForHealth(baseUrl: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(`${baseUrl}/health`);
      if (response.ok) return (await response.json()) as Record<string, unknown>;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${baseUrl}/health did not answer in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
