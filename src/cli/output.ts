/** Exit codes of every command (docs/cli.md, "Exit codes"). */
export const EXIT = { ok: 0, failed: 1, usage: 2, network: 3 } as const;

/** A command used wrongly: one line on standard error, exit code 2. */
export class UsageError extends Error {}

/** A proof that is not verified before any check ran (no trusted keys): one line, exit code 1. */
export class NotVerifiedError extends Error {}

/**
 * Characters a terminal may act on instead of showing: C0 controls (newlines and escape included), DEL,
 * C1 controls (U+0080–U+009F, U+009B being a one-character CSI), the Unicode line and paragraph
 * separators, and the bidirectional overrides and isolates that reorder what is shown.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text from a server or a file, made safe to print on a terminal: every control character is written as
 * an escape (`\n`, `\x1b`, `\u009b`), so no such text can move the cursor, clear the screen, recolour
 * or forge a line of the command's output. Every printing path of the command uses it.
 */
export function escapeControl(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return (
      NAMED[c] ??
      (code < 0x20 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`)
    );
  });
}

/** A line of text from a server or a file, printed on standard output with its controls escaped. */
export function printSafe(text: string): void {
  print(escapeControl(text));
}

/**
 * A value as indented JSON on standard output. JSON.stringify escapes the C0 controls in strings but
 * leaves DEL, C1 and the other characters above raw: they become `\u….` escapes, still the same JSON.
 */
export function printJson(value: unknown): void {
  print(jsonSafe(value));
}

/** `JSON.stringify(value, null, 2)` with no character a terminal acts on (see `printJson`). */
export function jsonSafe(value: unknown): string {
  return JSON.stringify(value, null, 2).split('\n').map(escapeControl).join('\n');
}

/** Text the command wrote itself (which may span lines); text from elsewhere goes through `printSafe`. */
export function print(text: string): void {
  process.stdout.write(text + '\n');
}
