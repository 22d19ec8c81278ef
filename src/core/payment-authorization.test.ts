import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readAuthorization, validityProblem } from './payment-authorization.ts';

const NETWORK = 'eip155:8453';
const FROM = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
const eip3009 = {
  signature: '0x' + '1'.repeat(130),
  authorization: {
    from: FROM,
    to: '0x' + '2'.repeat(40),
    value: '5000',
    validAfter: '1700000000',
    validBefore: '1800000000',
    nonce: '0x' + 'A'.repeat(64),
  },
};
const permit2 = {
  signature: '0x' + '3'.repeat(130),
  permit2Authorization: {
    from: FROM,
    permitted: { token: '0x' + '4'.repeat(40), amount: '5000' },
    spender: '0x' + '5'.repeat(40),
    nonce: '123456789012345678901234567890',
    deadline: '1800000000',
    witness: { to: '0x' + '2'.repeat(40), validAfter: '1700000000' },
  },
};

test('an EIP-3009 authorization: payer and nonce lowercase, expiry in ms, a digest of the signed payload', () => {
  const read = readAuthorization(NETWORK, eip3009);
  assert.deepEqual(
    { ...read, payloadDigest: undefined },
    {
      network: NETWORK,
      payer: FROM.toLowerCase(),
      nonce: '0x' + 'a'.repeat(64),
      payloadDigest: undefined,
      validBeforeMs: 1_800_000_000_000,
    },
  );
  assert.match(read?.payloadDigest ?? '', /^[0-9a-f]{64}$/);
  // The digest is of the canonical form: key order does not change it, any signed byte does.
  const reordered = { authorization: { ...eip3009.authorization }, signature: eip3009.signature };
  assert.equal(readAuthorization(NETWORK, reordered)?.payloadDigest, read?.payloadDigest);
  const resigned = { ...eip3009, signature: '0x' + '9'.repeat(130) };
  assert.notEqual(readAuthorization(NETWORK, resigned)?.payloadDigest, read?.payloadDigest);
});

test('a Permit2 authorization has its own payer (never an empty scope) and its deadline as expiry', () => {
  const read = readAuthorization(NETWORK, permit2);
  assert.equal(read?.payer, FROM.toLowerCase());
  assert.equal(read?.nonce, '123456789012345678901234567890');
  assert.equal(read?.validBeforeMs, 1_800_000_000_000);
});

test('anything else is no authorization', () => {
  const broken: unknown[] = [
    null,
    'text',
    {},
    { ...eip3009, permit2Authorization: permit2.permit2Authorization },
    { authorization: { ...eip3009.authorization, from: undefined } },
    { authorization: { ...eip3009.authorization, from: '0x1234' } },
    { authorization: { ...eip3009.authorization, nonce: '0x12' } },
    { authorization: { ...eip3009.authorization, validBefore: '-1' } },
    { authorization: { ...eip3009.authorization, validBefore: '9'.repeat(30) } },
    { permit2Authorization: { ...permit2.permit2Authorization, nonce: '0xabc' } },
    { permit2Authorization: { ...permit2.permit2Authorization, from: '' } },
  ];
  for (const payload of broken)
    assert.equal(readAuthorization(NETWORK, payload), undefined, JSON.stringify(payload));
});

test('the validity window must fit the terms: not expired, not valid beyond maxTimeoutSeconds and the skew', () => {
  const now = 1_800_000_000_000;
  const at = (validBeforeMs: number) => ({ ...readAuthorization(NETWORK, eip3009)!, validBeforeMs });
  assert.equal(validityProblem(at(now + 300_000), now, 300, 30), undefined);
  assert.equal(validityProblem(at(now + 330_000), now, 300, 30), undefined);
  assert.match(validityProblem(at(now + 330_001), now, 300, 30) ?? '', /too long/);
  assert.match(validityProblem(at(now + 3 * 365 * 86_400_000), now, 300, 30) ?? '', /too long/);
  assert.match(validityProblem(at(now), now, 300, 30) ?? '', /expired/);
});
