import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { api, notarizeBody, startServer, type TestServer } from '../../test/helper.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { verifyReceipt } from '../core/receipt.ts';

let server: TestServer;
before(async () => (server = await startServer()));
after(async () => {
  await server.close();
  server.cleanup();
});

test('every proof carries an Ed25519 receipt that verifies with the published key alone', async () => {
  const { proof } = (await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).body;
  assert.match(proof.receipt.keyId, /^ed25519-[0-9a-f]{16}$/);
  const manifest = await api(server.baseUrl, '/.well-known/hashproof-keys.json', {
    headers: { origin: 'https://elsewhere.example' },
  });
  assert.equal(manifest.status, 200);
  assert.equal(manifest.headers.get('access-control-allow-origin'), '*');
  const entry = manifest.body.keys.find((k: { keyId: string }) => k.keyId === proof.receipt.keyId);
  assert.equal(entry.algorithm, 'Ed25519');
  assert.equal(entry.validUntil, null);
  const publicKey = createPublicKey({
    key: Buffer.from(entry.publicKey, 'base64'),
    format: 'der',
    type: 'spki',
  });
  // Rebuilt from the public proof document, as a third party would.
  assert.equal(verifyReceipt(publicKey, signingMessage(proof), proof.receipt.signature), true);
  assert.equal(
    verifyReceipt(publicKey, signingMessage({ ...proof, label: proof.label + '!' }), proof.receipt.signature),
    false,
  );
  assert.ok(!manifest.text.includes('PRIVATE'), 'no private key is published');

  const report = await api(server.baseUrl, `/api/verify/proofs/${proof.id}`);
  assert.equal(report.body.checks.receipt.status, 'valid');
  assert.equal(report.body.verified, true);
});

test('a tampered receipt is reported invalid, and the proof unverified', async () => {
  const { proof } = (await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).body;
  const bytes = Buffer.from(proof.receipt.signature.slice('ed25519:'.length), 'base64');
  bytes[10]! ^= 0xff;
  await server.ctx.database.db
    .updateTable('proofs')
    .set({ receipt: 'ed25519:' + bytes.toString('base64') })
    .where('id', '=', proof.id)
    .execute();
  const report = await api(server.baseUrl, `/api/verify/proofs/${proof.id}`);
  assert.equal(report.body.checks.signature.status, 'valid');
  assert.equal(report.body.checks.receipt.status, 'invalid');
  assert.equal(report.body.verified, false);
});

test('after a key rotation old receipts still verify and the manifest shows both windows', async (t) => {
  // A clock of the test's own: the new key takes over at a known instant between the two proofs.
  let now = 0;
  const server = await startServer({ clock: { now: () => now } });
  now = Date.now(); // after the first keys were made

  t.after(async () => {
    await server.close();
    server.cleanup();
  });
  const before = (await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).body.proof;
  now += 1000;
  server.ctx.keyring.rotate(new Date(now));
  const after = (await api(server.baseUrl, '/api/proof/notarize', { body: notarizeBody() })).body.proof;
  assert.notEqual(after.receipt.keyId, before.receipt.keyId);
  assert.notEqual(after.keyId, before.keyId);
  for (const proof of [before, after]) {
    const report = await api(server.baseUrl, `/api/verify/proofs/${proof.id}`);
    assert.equal(report.body.verified, true, proof.id);
  }
  const keys = (await api(server.baseUrl, '/.well-known/hashproof-keys.json')).body.keys;
  const old = keys.find((k: { keyId: string }) => k.keyId === before.receipt.keyId);
  const current = keys.find((k: { keyId: string }) => k.keyId === after.receipt.keyId);
  assert.equal(old.validUntil, current.validFrom);
  assert.equal(current.validUntil, null);
});
