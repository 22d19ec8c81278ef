import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { api, makeDataDir, notarizeBody, startServer } from '../../test/helper.ts';

const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8);

// SQLite whatever TEST_DATABASE_URL says: these are the embedded database's files.
test('what the service creates for its database and keys is readable by its owner only', async () => {
  const root = makeDataDir();
  // Outside the default layout: the keys elsewhere, so the database's directories are made for it alone.
  const database = path.join(root, 'fresh', 'nested', 'hashproof.sqlite');
  const keys = path.join(root, 'elsewhere', 'keys');
  const server = await startServer({
    dataDir: root,
    env: { DATABASE_URL: `sqlite:${database}`, SIGNING_KEYS_DIR: keys },
  });
  try {
    assert.equal((await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).status, 200);
    // While it serves, the write-ahead log and its index exist beside the database.
    for (const dir of ['fresh', 'fresh/nested', 'elsewhere', 'elsewhere/keys'])
      assert.equal(modeOf(path.join(root, dir)), '700', dir);
    for (const suffix of ['', '-wal', '-shm']) assert.equal(modeOf(database + suffix), '600', suffix || 'db');
    const keyFiles = readdirSync(keys);
    assert.ok(keyFiles.length >= 4, keyFiles.join(' '));
    for (const file of keyFiles) assert.equal(modeOf(path.join(keys, file)), '600', file);
  } finally {
    await server.close();
    server.cleanup();
  }
});

test('a directory that already exists keeps its mode; a new database file in it is still 0600', async () => {
  const root = makeDataDir();
  const shared = path.join(root, 'shared');
  mkdirSync(shared, { mode: 0o755 });
  const database = path.join(shared, 'hashproof.sqlite');
  const server = await startServer({
    dataDir: root,
    env: { DATABASE_URL: `sqlite:${database}`, SIGNING_KEYS_DIR: path.join(root, 'keys') },
  });
  try {
    assert.equal((await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).status, 200);
    assert.equal(modeOf(shared), '755');
    for (const suffix of ['', '-wal', '-shm']) assert.equal(modeOf(database + suffix), '600', suffix || 'db');
  } finally {
    await server.close();
    server.cleanup();
  }
});
