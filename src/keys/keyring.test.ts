import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Keyring } from './keyring.ts';

const tempDir = () => mkdtempSync(path.join(os.tmpdir(), 'hashproof-keys-'));

test('a new directory gets one key, and the same key comes back on reopen', () => {
  const dir = path.join(tempDir(), 'keys');
  const first = Keyring.open(dir);
  assert.match(first.active.keyId, /^hmac-[0-9a-f]{16}$/);
  assert.equal(first.active.secret.length, 32);
  const again = Keyring.open(dir);
  assert.equal(again.active.keyId, first.active.keyId);
  assert.deepEqual(again.active.secret, first.active.secret);
  for (const name of readdirSync(dir)) assert.equal(statSync(path.join(dir, name)).mode & 0o777, 0o600, name);
  assert.match(first.activeReceiptKey.keyId, /^ed25519-[0-9a-f]{16}$/);
  assert.equal(again.activeReceiptKey.keyId, first.activeReceiptKey.keyId);
  assert.equal(again.activeReceiptKey.validUntil, null);
});

test('rotation signs with the new keys from their time on and keeps the old ones for verification', () => {
  const dir = tempDir();
  const ring = Keyring.open(dir);
  const old = ring.active;
  const from = new Date(Date.now() + 60_000);
  const rotated = ring.rotate(from);
  assert.notEqual(rotated.hmac.keyId, old.keyId);
  assert.equal(ring.active.keyId, old.keyId, 'the old key signs until the new one takes over');
  assert.equal(ring.signingKeys(from.getTime()).hmac.keyId, rotated.hmac.keyId);
  assert.equal(ring.signingKeys(from.getTime()).receipt.keyId, rotated.receipt.keyId);
  assert.equal(ring.signingKeys(from.getTime() - 1).receipt.keyId, ring.receiptKeys()[0]!.keyId);
  assert.equal(ring.find(old.keyId)?.keyId, old.keyId);
  assert.throws(() => ring.rotate(from), /after the newest key/);
  const reopened = Keyring.open(dir);
  assert.equal(reopened.signingKeys(from.getTime()).hmac.keyId, rotated.hmac.keyId);
  assert.equal(reopened.list().length, 2);
  assert.equal(reopened.list()[0]!.validUntil, from.toISOString());
  const [oldReceipt, newReceipt] = reopened.receiptKeys();
  assert.ok(oldReceipt && newReceipt);
  assert.equal(
    oldReceipt.validUntil,
    newReceipt.validFrom,
    'the old receipt key is valid until the new one took over',
  );
  assert.equal(newReceipt.validUntil, null);
  assert.equal(newReceipt.validFrom, from.toISOString());
});

test('reload makes keys another process added sign, and keeps what a caller already took', () => {
  const dir = tempDir();
  const running = Keyring.open(dir);
  const taken = running.signingKeys(Date.now());
  const added = Keyring.load(dir).rotate(new Date(Date.now() + 1));
  const later = Date.now() + 10;
  assert.equal(running.signingKeys(later).hmac.keyId, taken.hmac.keyId, 'not read yet');
  running.reload();
  assert.equal(running.signingKeys(later).hmac.keyId, added.hmac.keyId);
  assert.equal(running.signingKeys(later).receipt.keyId, added.receipt.keyId);
  assert.equal(taken.receipt.validUntil, null, 'the keys taken before are the objects they were');
});

test('load creates nothing', () => {
  const dir = tempDir();
  assert.throws(() => Keyring.load(dir), /no HMAC key/);
  assert.deepEqual(readdirSync(dir), []);
});

test('a key added by another instance sharing the directory is found on demand', () => {
  const dir = tempDir();
  const a = Keyring.open(dir);
  const b = Keyring.open(dir);
  const added = b.rotate(new Date(Date.now() + 1000)).hmac;
  assert.equal(a.find(added.keyId)?.keyId, added.keyId);
  assert.equal(a.find('hmac-0000000000000000'), undefined);
});

test('a tampered key file is refused at start rather than producing bad signatures', () => {
  const dir = tempDir();
  const ring = Keyring.open(dir);
  const file = path.join(dir, `${ring.active.keyId}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      keyId: ring.active.keyId,
      algorithm: 'hmac-sha256',
      secret: Buffer.alloc(32).toString('base64'),
      createdAt: ring.active.createdAt,
    }),
  );
  assert.throws(() => Keyring.open(dir), /malformed/);
});
