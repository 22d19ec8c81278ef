import assert from 'node:assert/strict';
import { chmodSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { startInstance, type Instance } from '../../test/cluster.ts';
import { api, dropTestSchema, notarizeBody, scratchDirs, testDatabaseUrl } from '../../test/helper.ts';
import { printed, run } from '../../test/process.ts';
import { Keyring } from './keyring.ts';

// A signing key that another account on the machine can read is no longer the service's alone: it is
// refused wherever keys are read, with the file named and the command that fixes it.

const scratch = scratchDirs();
const CLI = path.join(import.meta.dirname, '..', 'cli', 'main.ts');
const MAIN = path.join(import.meta.dirname, '..', 'main.ts');
const running: Instance[] = [];
after(() => Promise.all(running.map((instance) => instance.stop('SIGKILL'))));

const refusal = (file: string, mode: string) =>
  new RegExp(`signing key file ${file} is open to group or others \\(mode ${mode}\\): run chmod 600 ${file}`);

/** A keys directory with every kind of key file (the TSA's content is not read before its mode is). */
function keysDir(): string {
  const dir = path.join(scratch(), 'keys');
  void Keyring.open(dir).logKey;
  writeFileSync(path.join(dir, 'tsa.json'), '{}', { mode: 0o600 });
  return dir;
}

/** The file in `dir` whose name starts with `prefix`. */
const keyFile = (dir: string, prefix: string) =>
  path.join(
    dir,
    readdirSync(dir).find((name) => name.startsWith(prefix))!,
  );

test('every kind of key file open to group or others is refused; 0600 and 0400 are not', () => {
  const dir = keysDir();
  const names = readdirSync(dir);
  assert.deepEqual(names.map((name) => name.replace(/-[0-9a-f]{16}/, '')).sort(), [
    'ed25519.json',
    'hmac.json',
    'log-ed25519.pem',
    'tsa.json',
  ]);
  for (const name of names) {
    const file = path.join(dir, name);
    for (const mode of [0o644, 0o640, 0o604, 0o620]) {
      chmodSync(file, mode);
      const shown = `0${mode.toString(8)}`;
      assert.throws(() => Keyring.load(dir), refusal(file, shown), `${name} ${shown}`);
      assert.throws(() => Keyring.open(dir), refusal(file, shown), `${name} ${shown}`);
    }
    for (const mode of [0o600, 0o400]) {
      chmodSync(file, mode);
      assert.ok(Keyring.load(dir));
    }
  }
  // The log key is read when first used: the file is checked then too.
  const ring = Keyring.load(dir);
  chmodSync(path.join(dir, 'log-ed25519.pem'), 0o644);
  assert.throws(() => ring.logKey, refusal(path.join(dir, 'log-ed25519.pem'), '0644'));
});

test('the service does not start on a key file readable by others, and says which file and chmod 600', async () => {
  const dir = keysDir();
  const hmac = keyFile(dir, 'hmac-');
  chmodSync(hmac, 0o644);
  const started = await run(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: `sqlite:${path.join(dir, '..', 'hashproof.db')}`,
      SIGNING_KEYS_DIR: dir,
    },
  });
  assert.equal(started.code, 1, started.stdout + started.stderr);
  assert.equal(started.stderr.trim().split('\n').length, 1, started.stderr);
  assert.match(started.stderr, /^hashproof: failed to start: /);
  assert.match(started.stderr, refusal(hmac, '0644'));
});

test('hashproof keys list and rotate refuse such a file too, and rotate writes no key', async () => {
  const dir = keysDir();
  const receipt = keyFile(dir, 'ed25519-');
  chmodSync(receipt, 0o640);
  const env = { PATH: process.env.PATH, SIGNING_KEYS_DIR: dir };
  for (const action of ['list', 'rotate']) {
    const result = await run(process.execPath, [CLI, 'keys', action], { env });
    assert.equal(result.code, 1, action);
    assert.match(result.stderr, refusal(receipt, '0640'), action);
    assert.match(
      result.stderr,
      /^hashproof: signing key file /,
      `${action}: one plain line, no "unexpected error"`,
    );
  }
  assert.equal(readdirSync(dir).length, 4, 'rotate added nothing');
});

test('SIGHUP that finds a key file readable by others keeps the keys in use and logs why', async () => {
  const dataDir = scratch();
  const dir = path.join(dataDir, 'keys');
  after(() => dropTestSchema(dataDir));
  const service = await startInstance({
    DATABASE_URL: await testDatabaseUrl(dataDir),
    SIGNING_KEYS_DIR: dir,
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'info',
  });
  running.push(service);
  const signedBy = async () => {
    const res = await api(service.baseUrl, '/api/proof/notarize', { method: 'POST', body: notarizeBody() });
    assert.equal(res.status, 200, res.text);
    return res.body.proof.keyId as string;
  };
  const before = await signedBy();
  const rotated = await run(process.execPath, [CLI, 'keys', 'rotate', '--activate-in', '0', '--json'], {
    env: { PATH: process.env.PATH, SIGNING_KEYS_DIR: dir },
  });
  assert.equal(rotated.code, 0, rotated.stderr);
  const added = JSON.parse(rotated.stdout).hmac as string;
  const file = path.join(dir, `${added}.json`);
  chmodSync(file, 0o644);

  const refused = printed(service.child, 'signing keys not reloaded');
  service.child.kill('SIGHUP');
  const said = await refused;
  assert.match(said, refusal(file, '0644'));
  assert.equal(await signedBy(), before, 'the keys in use stay');

  chmodSync(file, 0o600);
  const reloaded = printed(service.child, 'signing keys reloaded');
  service.child.kill('SIGHUP');
  await reloaded;
  assert.equal(await signedBy(), added);
});
