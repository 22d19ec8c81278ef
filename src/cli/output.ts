/** Exit codes of every command (docs/cli.md). */
export const EXIT = { ok: 0, failed: 1, usage: 2, network: 3 } as const;

/** A command used wrongly: one line on standard error, exit code 2. */
export class UsageError extends Error {}

export function print(text: string): void {
  process.stdout.write(text + '\n');
}
