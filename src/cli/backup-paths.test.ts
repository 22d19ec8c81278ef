import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { BackupRefused, pathProblem } from './operator/backup-manifest.ts';
import { openListed } from './operator/backup-files.ts';

// The path rule of `hashproof restore` for every file backup.json lists: a plain relative path inside
// the backup folder, reached through no symbolic link.

const root = mkdtempSync(path.join(os.tmpdir(), 'hashproof-backup-paths-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** One part of a plain path: any characters but `/`, `\`, NUL and other control characters; not `.` or `..`. */
const plainPart = fc
  .string({ minLength: 1, maxLength: 8, unit: 'grapheme' })
  // eslint-disable-next-line no-control-regex
  .filter((part) => /^[^/\\\u0000-\u001f\u007f-\u009f]+$/.test(part) && part !== '.' && part !== '..');
const plainPath = fc.array(plainPart, { minLength: 1, maxLength: 4 });

test('any plain relative path is accepted', () => {
  fc.assert(fc.property(plainPath, (parts) => pathProblem(parts.join('/')) === undefined));
});

test('a path with "..", ".", an empty part, an absolute start, a backslash or a control character is refused', () => {
  const spoiler = fc.oneof(
    fc.constantFrom('..', '.', ''),
    fc.constantFrom('..\\..', 'a\\..\\b', '\\', 'C:\\Windows', '\\\\host\\share'),
    fc.constantFrom('\u0000', 'a\u0000b', '\n', '\u001b[2J', '\u009b', '\u007f'),
  );
  fc.assert(
    fc.property(plainPath, spoiler, fc.nat(), (parts, bad, at) => {
      const spoiled = [...parts];
      spoiled.splice(at % (parts.length + 1), 0, bad);
      return pathProblem(spoiled.join('/')) !== undefined;
    }),
  );
  fc.assert(fc.property(plainPath, (parts) => pathProblem(`/${parts.join('/')}`) !== undefined));
  fc.assert(fc.property(plainPath, (parts) => pathProblem(`${parts.join('/')}/`) !== undefined));
});

test('a listed file opens when every part of its path is real, and is refused when any part is a symbolic link', async () => {
  let folders = 0;
  await fc.assert(
    fc.asyncProperty(plainPath, fc.nat(), async (parts, at) => {
      const folder = path.join(root, `folder-${++folders}`);
      const elsewhere = path.join(root, `elsewhere-${folders}`);
      for (const base of [folder, elsewhere]) {
        mkdirSync(path.join(base, ...parts.slice(0, -1)), { recursive: true });
        writeFileSync(path.join(base, ...parts), 'listed');
      }
      const file = parts.join('/');
      const handle = await openListed(folder, file);
      assert.equal(await handle.readFile('utf8'), 'listed');
      await handle.close();
      // The same path with one part replaced by a link to the same thing elsewhere.
      const linked = at % parts.length;
      const part = path.join(...parts.slice(0, linked + 1));
      rmSync(path.join(folder, part), { recursive: true });
      symlinkSync(path.join(elsewhere, part), path.join(folder, part));
      await assert.rejects(openListed(folder, file), (error: unknown) => {
        assert.ok(error instanceof BackupRefused);
        assert.match(error.message, /is a symbolic link/);
        return true;
      });
    }),
    { numRuns: 60 },
  );
});
