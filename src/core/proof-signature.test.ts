import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson } from './canonical-json.ts';
import { hmacSign, hmacVerify, signingMessage, type SignedProofFields } from './proof-signature.ts';

const key = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
const fields: SignedProofFields = {
  id: 'proof_01JD0000000000000000000000',
  timestamp: '2026-11-22T10:00:00.000Z',
  contentHash: 'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  metadataHash: 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a',
  label: 'build artifact',
};

test('the signing message is the JCS form with v:1', () => {
  assert.equal(
    signingMessage(fields),
    '{"contentHash":"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",' +
      '"id":"proof_01JD0000000000000000000000","label":"build artifact",' +
      '"metadataHash":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",' +
      '"timestamp":"2026-11-22T10:00:00.000Z","v":1}',
  );
});

test('the signing message is the JCS form for labels of any characters, and refuses lone surrogates as JCS does', () => {
  const labels = [
    'quote " and \\ backslash',
    'tab\tand\u0001control',
    'é 漢字 😀',
    '\u2028\u2029',
    '</script>',
    '',
  ];
  for (const label of labels) {
    const jcs = canonicalJson({ v: 1, ...fields, label });
    assert.equal(signingMessage({ ...fields, label }), jcs, label);
  }
  assert.throws(() => signingMessage({ ...fields, label: 'lone \ud800' }), /surrogate/i);
});

test('HMAC matches an independent computation (openssl dgst -mac HMAC)', () => {
  assert.equal(
    hmacSign(key, fields),
    'hmac-sha256:fdfd0216e71460b239cf5fcfa1d763abe6339c16ba019bfc50a67c576bdb2d9e',
  );
});

test('verification fails for any changed field, key or signature', () => {
  const signature = hmacSign(key, fields);
  assert.equal(hmacVerify(key, fields, signature), true);
  for (const name of Object.keys(fields) as (keyof SignedProofFields)[]) {
    assert.equal(hmacVerify(key, { ...fields, [name]: fields[name] + 'x' }, signature), false, name);
  }
  const otherKey = Buffer.from(key);
  otherKey[0] = 0xff;
  assert.equal(hmacVerify(otherKey, fields, signature), false);
  const lastDigit = signature.at(-1) === '0' ? '1' : '0';
  assert.equal(hmacVerify(key, fields, signature.slice(0, -1) + lastDigit), false);
  assert.equal(hmacVerify(key, fields, 'hmac-sha256:'), false);
  assert.equal(hmacVerify(key, fields, signature.toUpperCase()), false);
});
