import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, utimesSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';
import { scratchDirs } from '../../test/helper.ts';
import { formatCheckpoint, formatVerifierKey, signNote } from '../core/signed-note.ts';
import { LogStateFiles } from './log-state.ts';

const scratch = scratchDirs();
const ORIGIN = 'state.example/log';
const { privateKey, publicKey } = generateKeyPairSync('ed25519');

function checkpointOf(size: number) {
  const rootHash = Buffer.alloc(32, size);
  const body = formatCheckpoint({ origin: ORIGIN, size, rootHash, extensions: [] });
  return { treeSize: size, rootHash, checkpoint: signNote(body, ORIGIN, privateKey, publicKey) };
}

test('a record is written through a hidden temporary file, and one a dead writer left is removed on opening', async () => {
  const dir = scratch();
  const files = new LogStateFiles(dir, ORIGIN, formatVerifierKey(ORIGIN, publicKey));
  await files.open();
  // Every name that appears in the directory while the record is written, up to the record itself.
  const seen: string[] = [];
  const written = `${files.prefix}7`;
  const watcher = watch(dir);
  const recorded = new Promise<void>((resolve) =>
    watcher.on('change', (_, name) => {
      seen.push(String(name));
      if (name === written) resolve();
    }),
  );
  await files.write(checkpointOf(7));
  await recorded;
  watcher.close();
  const temp = seen.find((name) => name !== written);
  assert.ok(temp !== undefined, `a temporary file among ${seen.join(', ')}`);
  assert.ok(temp.startsWith(`.${files.prefix}7.`) && temp.endsWith('.tmp'), temp);
  assert.deepEqual(readdirSync(dir), [written]);

  // The same name left behind by a writer that died before its rename, eleven minutes ago.
  const stale = path.join(dir, temp);
  writeFileSync(stale, 'part of a checkpoint');
  const past = new Date(Date.now() - 11 * 60_000);
  utimesSync(stale, past, past);
  const fresh = path.join(dir, `.${files.prefix}8.000000000000.tmp`);
  writeFileSync(fresh, 'a write under way');
  await new LogStateFiles(dir, ORIGIN, formatVerifierKey(ORIGIN, publicKey)).open();
  assert.equal(existsSync(stale), false);
  assert.equal(existsSync(fresh), true, 'a recent temporary file may be another writer at work');
  assert.equal((await files.latest())?.treeSize, 7);
});
