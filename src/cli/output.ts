/** Exit codes of every command (docs/cli.md). */
export const EXIT = { ok: 0, failed: 1, usage: 2, network: 3 } as const;

/** A command used wrongly: one line on standard error, exit code 2. */
export class UsageError extends Error {}

/** A proof that is not verified before any check ran (no trusted keys): one line, exit code 1. */
export class NotVerifiedError extends Error {}

export function print(text: string): void {
  process.stdout.write(text + '\n');
}

/**
 * Text from a server or a proof file, made safe for a terminal: C0 and C1 control characters (and DEL)
 * are shown escaped (`\x1b`, `\u009b`), so no answer can move the cursor, clear the screen or print a
 * line of its own.
 */
export function escapeControl(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x80
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
