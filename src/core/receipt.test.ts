import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ed25519KeyId, signReceipt, verifyReceipt } from './receipt.ts';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const message =
  '{"contentHash":"sha256:00","id":"proof_x","label":"l","metadataHash":"sha256:11","timestamp":"t","v":1}';

test('a receipt verifies with its public key and fails for any change', () => {
  const receipt = signReceipt(privateKey, message);
  assert.match(receipt, /^ed25519:[A-Za-z0-9+/]{86}==$/);
  assert.equal(verifyReceipt(publicKey, message, receipt), true);
  assert.equal(verifyReceipt(publicKey, message.replace('"l"', '"m"'), receipt), false);
  assert.equal(verifyReceipt(generateKeyPairSync('ed25519').publicKey, message, receipt), false);
  const bytes = Buffer.from(receipt.slice(8), 'base64');
  bytes[0]! ^= 1;
  assert.equal(verifyReceipt(publicKey, message, 'ed25519:' + bytes.toString('base64')), false);
  assert.equal(verifyReceipt(publicKey, message, 'ed25519:AAAA'), false);
  assert.equal(verifyReceipt(publicKey, message, receipt.replace('ed25519:', 'rsa:')), false);
});

test('openssl, an independent implementation, accepts the receipt', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'receipt-'));
  writeFileSync(path.join(dir, 'pub.pem'), publicKey.export({ format: 'pem', type: 'spki' }));
  writeFileSync(path.join(dir, 'msg'), message);
  writeFileSync(path.join(dir, 'sig'), Buffer.from(signReceipt(privateKey, message).slice(8), 'base64'));
  const out = execFileSync(
    'openssl',
    ['pkeyutl', '-verify', '-pubin', '-inkey', 'pub.pem', '-rawin', '-in', 'msg', '-sigfile', 'sig'],
    { cwd: dir },
  ).toString();
  assert.match(out, /Signature Verified Successfully/);
});

test('key ids name the public key', () => {
  assert.match(ed25519KeyId(publicKey), /^ed25519-[0-9a-f]{16}$/);
  assert.notEqual(ed25519KeyId(publicKey), ed25519KeyId(generateKeyPairSync('ed25519').publicKey));
});
