import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

/**
 * The repository stands alone: no tracked text cites a document kept outside it (a specification or a
 * decision record beside the repository, a notes folder, a path on one machine). Code, tests, scripts and
 * docs cite the repository's own `docs/`, or RFCs and public specifications by URL.
 */

const ROOT = path.resolve(import.meta.dirname, '..');

/** Each pattern is written with escapes, so this file's own text matches none of them. */
const OUTSIDE_CITATIONS: { what: string; pattern: RegExp }[] = [
  { what: 'the outside specification', pattern: /\bSPEC\.md\b|\bSPEC\s*§/ },
  { what: 'the outside decision record', pattern: /\bDECISIONS\.md\b|\bDECISIONS\s*§/ },
  { what: 'a folder beside the repository', pattern: /\.\.\/shared\b/ },
  { what: 'a notes folder (docs/ is where notes belong)', pattern: /(?<![\w.-])(?<!docs\/)notes\/[\w.-]/ },
  { what: 'an absolute path on one machine', pattern: /(?<![\w.-])\/(?:work|home|Users)\/[\w.-]/ },
];

/** Test data kept as published upstream (its own README names its source). */
const SKIPPED_DIRECTORIES = ['test/vectors/'];

interface Finding {
  file: string;
  line: number;
  what: string;
  text: string;
}

function trackedTextFiles(): { file: string; text: string }[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file !== '' && !SKIPPED_DIRECTORIES.some((dir) => file.startsWith(dir)));
  const texts: { file: string; text: string }[] = [];
  for (const file of files) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(path.join(ROOT, file));
    } catch (error) {
      // A tracked file deleted in the working tree has nothing to check.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    if (bytes.includes(0)) continue; // binary
    texts.push({ file, text: bytes.toString('utf8') });
  }
  return texts;
}

function findings(files: { file: string; text: string }[]): Finding[] {
  const found: Finding[] = [];
  for (const { file, text } of files) {
    text.split('\n').forEach((line, i) => {
      for (const { what, pattern } of OUTSIDE_CITATIONS) {
        if (pattern.test(line)) found.push({ file, line: i + 1, what, text: line.trim() });
      }
    });
  }
  return found;
}

test('no tracked text file cites a document outside the repository', () => {
  const outside = findings(trackedTextFiles()).map(
    ({ file, line, what, text }) => `${file}:${line}: ${what}: ${text}`,
  );
  assert.deepEqual(
    outside,
    [],
    `cite docs/ (or an RFC or specification by URL) instead:\n${outside.join('\n')}`,
  );
});

test('the patterns find what they look for and leave the repository’s own citations alone', () => {
  const sample = (text: string) => findings([{ file: 'sample.ts', text }]).map((finding) => finding.what);
  for (const bad of [
    '/** ' + 'SPEC' + '.md §4: proof creation */',
    '// see ' + 'DECISIONS' + ' §3',
    'read ' + '../' + 'shared/spec first',
    '(' + 'notes' + '/conventions.md §4.3)',
    'open ' + '/wo' + 'rk/main/README.md',
  ]) {
    assert.equal(sample(bad).length, 1, bad);
  }
  for (const good of [
    '/** The rate limit (docs/api.md, "Rate limit"). */',
    '// docs/decisions.md §2',
    'see docs/notes/x.md',
    'https://example.com/' + 'wo' + 'rk/item',
    'release-notes/2026.md',
  ]) {
    assert.deepEqual(sample(good), [], good);
  }
});
