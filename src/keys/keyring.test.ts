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

test('rotation signs with the new key and keeps the old one for verification', () => {
  const dir = tempDir();
  const ring = Keyring.open(dir);
  const old = ring.active;
  const rotated = ring.rotate(new Date(Date.now() + 1000));
  assert.notEqual(rotated.keyId, old.keyId);
  assert.equal(ring.active.keyId, rotated.keyId);
  assert.equal(ring.find(old.keyId)?.keyId, old.keyId);
  const reopened = Keyring.open(dir);
  assert.equal(reopened.active.keyId, rotated.keyId);
  assert.equal(reopened.list().length, 2);
  const [oldReceipt, newReceipt] = reopened.receiptKeys();
  assert.ok(oldReceipt && newReceipt);
  assert.equal(
    oldReceipt.validUntil,
    newReceipt.validFrom,
    'the old receipt key is valid until the new one took over',
  );
  assert.equal(newReceipt.validUntil, null);
  assert.equal(reopened.activeReceiptKey.keyId, newReceipt.keyId);
});

test('a key added by another instance sharing the directory is found on demand', () => {
  const dir = tempDir();
  const a = Keyring.open(dir);
  const b = Keyring.open(dir);
  const added = b.rotate(new Date(Date.now() + 1000));
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
