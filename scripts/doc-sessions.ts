/**
 * Runs the shell sessions of the documentation against a fresh service and compares each answer with
 * the sample printed under it, so the README and docs/api.md cannot drift from what the service says.
 *
 *   node scripts/doc-sessions.ts [--write] [file.md …]     (default: README.md, docs/api.md, docs/verification.md)
 *
 * In a Markdown file:
 * - a block fenced as `sh session` is run; all of a file's session blocks run in order in one bash
 *   (`set -euo pipefail`), so a variable set by one block (`ID=$(… | jq -r .proof.id)`) is there for
 *   the next; `127.0.0.1:8080` and `localhost:8080` are rewritten to the fresh service's address, which
 *   is also HASHPROOF_URL, and `npm run hashproof --` runs this checkout's command from its sources
 *   (the sessions run in a folder of their own, where npm would find no package.json);
 * - a block fenced as `json answer` right after a session block is the sample of that block's standard
 *   output, which must be one JSON document of the same shape: the same keys (a key `…` allows others),
 *   the same types, array items like the sample's first; a string with `…` in it stands for any string;
 * - `<!-- session service: NAME=value … -->` sets the fresh service's environment.
 *
 * With --write, each sample is replaced by the real answer, keeping the sample's elisions (`…`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

interface Block {
  kind: 'session' | 'answer';
  text: string;
  /** Offsets of the block's body in the Markdown, for --write. */
  start: number;
  end: number;
}

interface Step {
  /** `line N`, where the session block starts in the Markdown. */
  command: string;
  code: string;
  answer?: Block;
}

export interface SessionReport {
  /** The session blocks run and whether each exited 0. */
  steps: { command: string; ok: boolean; output: string }[];
  /** Each difference between a sample and the real answer, as `line N: <JSON path> <what>`. */
  mismatches: string[];
  /** The Markdown with every sample replaced by the real answer (elisions kept). */
  written: string;
}

const FENCE = /^```(sh session|json answer)[ \t]*\n([\s\S]*?)^```[ \t]*$/gm;
const MARK = '\u001e';

function blocksOf(markdown: string): Block[] {
  return [...markdown.matchAll(FENCE)].map((m) => {
    const start = m.index + m[0].indexOf('\n') + 1;
    return {
      kind: m[1] === 'sh session' ? 'session' : 'answer',
      text: m[2] ?? '',
      start,
      end: start + (m[2] ?? '').length,
    };
  });
}

/** The environment the fresh service needs, from `<!-- session service: NAME=value … -->`. */
export function serviceEnvOf(markdown: string): Record<string, string> {
  const line = /<!--\s*session service:([^>]*)-->/.exec(markdown)?.[1] ?? '';
  return Object.fromEntries(
    line
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

/** Runs the file's sessions against `baseUrl` and compares the answers with their samples. */
export async function runSessions(markdown: string, baseUrl: string): Promise<SessionReport> {
  const steps: Step[] = [];
  for (const block of blocksOf(markdown)) {
    if (block.kind === 'session')
      steps.push({ command: `line ${markdown.slice(0, block.start).split('\n').length}`, code: block.text });
    else if (steps.at(-1) && !steps.at(-1)?.answer) (steps.at(-1) as Step).answer = block;
    else throw new Error(`a json answer block without a session block before it: ${block.text.slice(0, 60)}`);
  }
  const address = new URL(baseUrl).host;
  const command = `'${process.execPath}' '${path.join(import.meta.dirname, '..', 'src/cli/main.ts')}'`;
  const script = [
    'set -euo pipefail',
    ...steps.flatMap((step, i) => [
      `printf '\\n${MARK}${i}${MARK}\\n'`,
      step.code
        .replaceAll('127.0.0.1:8080', address)
        .replaceAll('localhost:8080', address)
        .replaceAll('npm run hashproof --', command),
    ]),
    `printf '\\n${MARK}end${MARK}\\n'`,
  ].join('\n');
  const stdout = await bash(script, { HASHPROOF_URL: baseUrl });
  const parts = stdout.split(new RegExp(`\\n${MARK}(\\d+|end)${MARK}\\n`));
  const outputs = new Map<string, string>();
  // Answers name the service as the Markdown does (`127.0.0.1:8080`), so --write keeps that address.
  for (let i = 1; i < parts.length; i += 2)
    outputs.set(parts[i] as string, (parts[i + 1] ?? '').replaceAll(address, '127.0.0.1:8080').trim());
  const finished = outputs.has('end');
  // A block ran to its end when the marker of the next one (or the last) was printed.
  const ran = steps.map((step, i) => ({
    ...step,
    ok: finished || outputs.has(String(i + 1)),
    output: outputs.get(String(i)),
  }));
  const mismatches: string[] = [];
  const replacements: { start: number; end: number; text: string }[] = [];
  for (const step of ran) {
    if (!step.ok) mismatches.push(`${step.command}: exits with an error (output: ${step.output ?? 'none'})`);
    if (!step.answer || step.output === undefined || !step.ok) continue;
    const sample: unknown = JSON.parse(step.answer.text);
    let actual: unknown;
    try {
      actual = JSON.parse(step.output);
    } catch {
      mismatches.push(`${step.command}: the answer is not one JSON document: ${step.output.slice(0, 200)}`);
      continue;
    }
    for (const difference of compareShape(sample, actual, ''))
      mismatches.push(`${step.command}: ${difference}`);
    const text = JSON.stringify(keepElisions(sample, actual), null, 2) + '\n';
    replacements.push({ start: step.answer.start, end: step.answer.end, text });
  }
  // The last sample first, so that the offsets of those before it still hold.
  const written = replacements.reduceRight(
    (text, r) => text.slice(0, r.start) + r.text + text.slice(r.end),
    markdown,
  );
  return {
    steps: ran.map(({ command, ok, output }) => ({ command, ok, output: output ?? '' })),
    mismatches,
    written,
  };
}

function bash(script: string, env: Record<string, string>): Promise<string> {
  const cwd = mkdtempSync(path.join(os.tmpdir(), 'hashproof-session-'));
  // The command line remembers checkpoints in its state folder: one of the session's own.
  const state = { HASHPROOF_STATE_DIR: path.join(cwd, '.state') };
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], {
      cwd,
      env: { ...process.env, ...env, ...state },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('error', reject);
    child.once('close', () => {
      rmSync(cwd, { recursive: true, force: true });
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

const typeOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;

const isElided = (value: unknown): boolean => typeof value === 'string' && value.includes('…');

function compareShape(sample: unknown, actual: unknown, at: string): string[] {
  const where = at || '/';
  if (typeOf(sample) !== typeOf(actual))
    return [`${where} is ${typeOf(actual)} in the answer, ${typeOf(sample)} in the sample`];
  if (Array.isArray(sample) && Array.isArray(actual)) {
    if (sample.length === 0) return [];
    if (actual.length === 0) return [`${where} is empty in the answer, not in the sample`];
    return actual.flatMap((item, i) => compareShape(sample[0], item, `${at}/${i}`));
  }
  if (typeOf(sample) !== 'object') return [];
  const s = sample as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const open = '…' in s;
  return [
    ...Object.keys(s)
      .filter((key) => key !== '…' && !(key in a))
      .map((key) => `${at}/${key} is in the sample, not in the answer`),
    ...Object.keys(a)
      .filter((key) => !(key in s) && !open)
      .map((key) => `${at}/${key} is in the answer, not in the sample`),
    ...Object.keys(s)
      .filter((key) => key in a)
      .flatMap((key) => compareShape(s[key], a[key], `${at}/${key}`)),
  ];
}

/** The real answer, except where the sample elides: a string with `…`, an object with a `…` key. */
function keepElisions(sample: unknown, actual: unknown): unknown {
  if (isElided(sample) && typeof actual === 'string') return sample;
  if (typeOf(sample) !== typeOf(actual)) return actual;
  if (Array.isArray(sample) && Array.isArray(actual))
    return sample.length === 0 ? actual : actual.map((item) => keepElisions(sample[0], item));
  if (typeOf(sample) !== 'object') return actual;
  const s = sample as Record<string, unknown>;
  if ('…' in s) return sample;
  return Object.fromEntries(
    Object.entries(actual as Record<string, unknown>).map(([key, value]) => [
      key,
      key in s ? keepElisions(s[key], value) : value,
    ]),
  );
}

async function main(args: string[]): Promise<number> {
  // The same fresh service as the tests': in process, on loopback, its own SQLite file and keys.
  const { startServer } = await import('../test/helper.ts');
  const write = args.includes('--write');
  const files = args.filter((arg) => arg !== '--write');
  const root = path.join(import.meta.dirname, '..');
  let failed = 0;
  for (const file of files.length > 0 ? files : ['README.md', 'docs/api.md', 'docs/verification.md']) {
    const markdown = readFileSync(path.join(root, file), 'utf8');
    const server = await startServer({ env: serviceEnvOf(markdown) });
    try {
      const report = await runSessions(markdown, server.baseUrl);
      for (const line of report.mismatches) process.stderr.write(`${file}: ${line}\n`);
      failed += report.mismatches.length;
      if (write) writeFileSync(path.join(root, file), report.written);
      process.stdout.write(
        `${file}: ${report.steps.length} session blocks, ${report.mismatches.length} differences\n`,
      );
    } finally {
      await server.close();
      server.cleanup();
    }
  }
  return failed === 0 ? 0 : 1;
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
