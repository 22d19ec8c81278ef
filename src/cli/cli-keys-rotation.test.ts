import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startInstance } from '../../test/cluster.ts';
import { notarizeBody, scratchDirs } from '../../test/helper.ts';
import { printed, run } from '../../test/process.ts';
import { Arrivals } from '../../test/wait.ts';

const CLI = path.join(import.meta.dirname, 'main.ts');
const scratch = scratchDirs();

interface Made {
  id: string;
  timestamp: string;
  keyId: string;
  receiptKeyId: string;
}

test('keys rotate and SIGHUP under load: no request fails, old proofs keep verifying, new ones carry the new keys', async (t) => {
  const data = scratch();
  const dir = path.join(data, 'keys');
  const hashproof = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, HASHPROOF_STATE_DIR: path.join(data, 'state'), ...env },
    });
  assert.equal((await hashproof(['keys', 'init', '--keys-dir', dir])).code, 0);
  const instance = await startInstance({
    DATABASE_URL: `sqlite:${path.join(data, 'hashproof.db')}`,
    SIGNING_KEYS_DIR: dir,
    LOG_LEVEL: 'info',
    RATE_LIMIT_MAX: '0',
  });
  t.after(() => instance.stop());
  const url = { HASHPROOF_URL: instance.baseUrl };
  const manifestNow = () =>
    fetch(`${instance.baseUrl}/.well-known/hashproof-keys.json`).then((r) => r.text());

  // A user's manifest saved before the rotation, and a file stamped before it.
  const savedBefore = path.join(data, 'keys-before.json');
  writeFileSync(savedBefore, await manifestNow());
  const oldFile = path.join(data, 'before.txt');
  writeFileSync(oldFile, 'stamped before the rotation');
  const stampedOld = await hashproof(['stamp', oldFile], url);
  assert.equal(stampedOld.code, 0, stampedOld.stderr);
  const listed = JSON.parse((await hashproof(['keys', 'list', '--keys-dir', dir, '--json'])).stdout);
  const oldHmac = listed.keys.find((k: any) => k.use === 'hmac').keyId;
  const oldReceipt = listed.keys.find((k: any) => k.use === 'receipt').keyId;

  // Continuous load: two clients notarizing one request after another, every failure counted.
  const made = new Arrivals<Made>();
  const failures: string[] = [];
  let loading = true;
  const client = async () => {
    while (loading) {
      try {
        const response = await fetch(`${instance.baseUrl}/api/proof/notarize`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(notarizeBody()),
        });
        const body = (await response.json()) as any;
        if (response.status !== 200) failures.push(`${response.status} ${JSON.stringify(body)}`);
        else
          made.add({
            id: body.proof.id,
            timestamp: body.proof.timestamp,
            keyId: body.proof.keyId,
            receiptKeyId: body.proof.receipt.keyId,
          });
      } catch (error) {
        failures.push(String(error));
      }
    }
  };
  const load = Promise.all([client(), client()]);
  let rotated: { validFrom: string; hmac: string; receipt: string };
  try {
    await made.until((items) => items.length >= 20, { what: 'proofs under load before the rotation' });
    const rotation = await hashproof(['keys', 'rotate', '--keys-dir', dir, '--activate-in', '5s', '--json']);
    assert.equal(rotation.code, 0, rotation.stderr);
    rotated = JSON.parse(rotation.stdout);
    const reloaded = printed(instance.child, 'signing keys reloaded');
    instance.child.kill('SIGHUP');
    await reloaded;
    await made.until((items) => items.filter((p) => p.receiptKeyId === rotated.receipt).length >= 20, {
      what: 'proofs signed with the new keys',
      timeoutMs: 30_000,
    });
  } finally {
    loading = false;
    await load;
  }
  const proofs = made.items;
  t.diagnostic(`${proofs.length} proofs under load, ${failures.length} failures`);
  assert.deepEqual(failures, [], 'no request failed');
  assert.doesNotMatch(instance.output(), /took over before this instance read it/, 'the reload came in time');

  // The keys switch at the time the rotation named, on the proofs' own clock, never before or after.
  const before = proofs.filter((p) => p.timestamp < rotated.validFrom);
  const after = proofs.filter((p) => p.timestamp >= rotated.validFrom);
  assert.ok(before.length >= 20 && after.length >= 20, `${before.length} before, ${after.length} after`);
  for (const p of before) assert.deepEqual([p.keyId, p.receiptKeyId], [oldHmac, oldReceipt], p.id);
  for (const p of after) assert.deepEqual([p.keyId, p.receiptKeyId], [rotated.hmac, rotated.receipt], p.id);

  // Proofs of either side of the switch verify, the old ones with the old keys.
  for (const p of [before[0]!, ...before.slice(-5), ...after.slice(0, 5), after.at(-1)!]) {
    const report = (await (await fetch(`${instance.baseUrl}/api/verify/proofs/${p.id}`)).json()) as any;
    assert.equal(report.verified, true, `${p.id}: ${JSON.stringify(report.checks)}`);
  }

  // The manifest lists both receipt keys, the old one valid until the new one took over.
  const manifest = JSON.parse(await manifestNow());
  const receipts = manifest.keys.filter((k: any) => k.use === 'receipt');
  assert.deepEqual(
    receipts.map((k: any) => [k.keyId, k.validFrom, k.validUntil]),
    [
      [oldReceipt, receipts[0].validFrom, rotated.validFrom],
      [rotated.receipt, rotated.validFrom, null],
    ],
  );

  // A proof file stamped before still verifies offline against the manifest saved before; a new proof
  // needs the new manifest, with which the old file verifies too.
  const oldVerified = await hashproof(['verify', oldFile, '--keys', savedBefore]);
  assert.equal(oldVerified.code, 0, oldVerified.stdout + oldVerified.stderr);
  const newFile = path.join(data, 'after.txt');
  writeFileSync(newFile, 'stamped after the rotation');
  assert.equal((await hashproof(['stamp', newFile], url)).code, 0);
  assert.equal(
    (await hashproof(['verify', newFile, '--keys', savedBefore])).code,
    1,
    'an unknown receipt key',
  );
  const savedAfter = path.join(data, 'keys-after.json');
  // Exported from the files, with the service's public URL (it names the log), as an operator publishes it.
  const exported = await hashproof([
    'keys',
    'export-public',
    '--keys-dir',
    dir,
    '--public-base-url',
    instance.baseUrl,
    '--out',
    savedAfter,
  ]);
  assert.equal(exported.code, 0, exported.stderr);
  assert.deepEqual(JSON.parse(readFileSync(savedAfter, 'utf8')), JSON.parse(await manifestNow()));
  for (const file of [newFile, oldFile]) {
    const verified = await hashproof(['verify', file, '--keys', savedAfter]);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
  }
});
