import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { startInstance } from '../../test/cluster.ts';
import { notarizeBody, scratchDirs } from '../../test/helper.ts';
import { printed, run } from '../../test/process.ts';

const CLI = path.join(import.meta.dirname, 'main.ts');
const scratch = scratchDirs();
const PUBLIC = 'https://proofs.example.test';

/** `hashproof keys …` as an operator runs it, with the environment given (and nothing else). */
function keys(args: string[], env: Record<string, string> = {}) {
  return run(process.execPath, [CLI, 'keys', ...args], { env: { PATH: process.env.PATH, ...env } });
}

/** Every key file of the directory with its mode, contents and modification time (not the log state). */
function snapshot(dir: string): Record<string, { mode: number; text: string; mtimeMs: number }> {
  return Object.fromEntries(
    readdirSync(dir)
      // The log's records (and the temporary file one is written through) are no keys.
      .filter((name) => !name.startsWith('log-checkpoint-') && !name.startsWith('.log-checkpoint-'))
      .sort()
      .map((name) => {
        const file = path.join(dir, name);
        const info = statSync(file);
        return [name, { mode: info.mode & 0o777, text: readFileSync(file, 'utf8'), mtimeMs: info.mtimeMs }];
      }),
  );
}

test('keys init makes every key in an empty directory; the service uses exactly those; init again changes nothing', async (t) => {
  const data = scratch();
  const dir = path.join(data, 'keys');
  const env = { SIGNING_KEYS_DIR: dir, PUBLIC_BASE_URL: PUBLIC };
  const init = await keys(['init', '--json'], env);
  assert.equal(init.code, 0, init.stderr);
  const report = JSON.parse(init.stdout);
  assert.deepEqual(report.created.map((k: any) => k.use).sort(), ['hmac', 'log', 'receipt', 'tsa']);
  assert.deepEqual(report.present, []);
  assert.equal(statSync(dir).mode & 0o777, 0o700);
  const files = snapshot(dir);
  assert.equal(Object.keys(files).length, 4, Object.keys(files).join(' '));
  for (const [name, file] of Object.entries(files)) assert.equal(file.mode, 0o600, name);
  const tsa = JSON.parse(files['tsa.json']!.text);
  assert.match(
    new X509Certificate(tsa.tsaCertPem).subject,
    /proofs\.example\.test/,
    'the TSA names the host',
  );

  const listed = JSON.parse((await keys(['list', '--json'], env)).stdout);
  assert.deepEqual(listed.missing, []);
  const idOf = (use: string) => listed.keys.filter((k: any) => k.use === use).map((k: any) => k.keyId);
  assert.ok(listed.keys.every((k: any) => k.active && k.validUntil === null));

  const instance = await startInstance({
    DATABASE_URL: `sqlite:${path.join(data, 'hashproof.db')}`,
    SIGNING_KEYS_DIR: dir,
    PUBLIC_BASE_URL: PUBLIC,
  });
  t.after(() => instance.stop());
  const served = await (await fetch(`${instance.baseUrl}/.well-known/hashproof-keys.json`)).text();
  const manifest = JSON.parse(served);
  for (const use of ['receipt', 'log', 'tsa'])
    assert.deepEqual(
      manifest.keys.filter((k: any) => k.use === use).map((k: any) => k.keyId),
      idOf(use),
      use,
    );
  const response = await fetch(`${instance.baseUrl}/api/proof/notarize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(notarizeBody()),
  });
  const { proof } = (await response.json()) as any;
  assert.equal(response.status, 200);
  assert.deepEqual([proof.keyId], idOf('hmac'));
  assert.deepEqual([proof.receipt.keyId], idOf('receipt'));
  assert.deepEqual(snapshot(dir), files, 'the service created no key of its own');

  // The same manifest, from the files alone, as an operator publishes it before a start.
  const exported = await keys(['export-public'], env);
  assert.equal(exported.code, 0, exported.stderr);
  assert.deepEqual(JSON.parse(exported.stdout), manifest);
  assert.equal(JSON.stringify(JSON.parse(exported.stdout)), served, 'byte for byte, but for the indentation');
  const out = path.join(data, 'manifest.json');
  assert.equal((await keys(['export-public', '--out', out], env)).code, 0);
  assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), manifest);

  const again = await keys(['init'], env);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /nothing to create: every key was there/);
  assert.equal((again.stdout.match(/^present /gm) ?? []).length, 4, again.stdout);
  assert.deepEqual(snapshot(dir), files, 'init again wrote nothing');

  // Keys that took over before the instance read them: its reload says so.
  assert.equal((await keys(['rotate', '--activate-in', '0'], env)).code, 0);
  const warned = printed(instance.child, 'took over before this instance read it');
  instance.child.kill('SIGHUP');
  await warned;
  assert.equal((await fetch(`${instance.baseUrl}/health`)).status, 200);
});

test('keys init completes a partial directory and keeps the key that was there', async () => {
  const full = path.join(scratch(), 'keys');
  assert.equal((await keys(['init', '--keys-dir', full])).code, 0);
  const hmac = readdirSync(full).find((name) => name.startsWith('hmac-'))!;
  const partial = path.join(scratch(), 'keys');
  mkdirSync(partial, { mode: 0o755 });
  copyFileSync(path.join(full, hmac), path.join(partial, hmac));
  const listedBefore = await keys(['list', '--keys-dir', partial]);
  assert.equal(listedBefore.code, 1, 'an incomplete directory is a failed check');
  assert.match(listedBefore.stdout, /missing: receipt, log, tsa/);

  const init = JSON.parse((await keys(['init', '--keys-dir', partial, '--json'])).stdout);
  assert.deepEqual(
    init.present.map((k: any) => k.keyId),
    [hmac.replace('.json', '')],
  );
  assert.deepEqual(init.created.map((k: any) => k.use).sort(), ['log', 'receipt', 'tsa']);
  assert.equal(statSync(partial).mode & 0o777, 0o700, 'the directory is closed to others');
  assert.equal(readFileSync(path.join(partial, hmac), 'utf8'), readFileSync(path.join(full, hmac), 'utf8'));
});

test('keys: rotate, list and export-public refuse a directory without keys; help tells signing keys from API keys', async () => {
  const empty = path.join(scratch(), 'none');
  for (const action of ['rotate', 'export-public']) {
    const result = await keys([action, '--keys-dir', empty]);
    assert.equal(result.code, 2, action);
    assert.match(result.stderr, /run hashproof keys init/, action);
  }
  const bad = await keys(['rotate', '--keys-dir', empty, '--activate-in', 'soon']);
  assert.equal(bad.code, 2);
  assert.throws(() => readdirSync(empty), /ENOENT/, 'nothing was created');
  const help = await keys(['--help']);
  assert.match(help.stdout, /Not the API keys\s+of accounts: those are hashproof admin keys/);
  const main = await run(process.execPath, [CLI, '--help'], { env: { PATH: process.env.PATH } });
  assert.match(main.stdout, /admin <area> <action> +accounts, API keys and webhooks/);
  assert.match(main.stdout, /keys <action> +the service's signing keys/);
});
