import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { makeDataDir } from '../../test/helper.ts';
import { body, chain, server, withX402Service } from '../payments/x402-test-setup.ts';
import { startMcp, type McpSession } from './mcp-test-setup.ts';

const PRICE_UNITS = 5000n;

withX402Service();

describe('hashproof mcp in x402 mode', () => {
  let work: string;
  let paying: McpSession;
  let unpaid: McpSession;
  let wallet: `0x${string}`;

  before(async () => {
    work = makeDataDir();
    const key = await chain.fundedPrivateKey(1_000_000n);
    wallet = privateKeyToAccount(key).address;
    const env = { HASHPROOF_URL: server.baseUrl, HASHPROOF_STATE_DIR: path.join(work, 'state') };
    paying = await startMcp({ ...env, HASHPROOF_WALLET_KEY: key }, work);
    unpaid = await startMcp(env, work);
  });
  after(async () => {
    await paying.client.close();
    await unpaid.client.close();
  });

  test('stamp_hash pays with HASHPROOF_WALLET_KEY once; a replay by its idempotency key pays nothing', async () => {
    const request = body();
    const first = await paying.call('stamp_hash', request);
    assert.equal(first.isError, false, JSON.stringify(first.answer));
    const proof = first.answer.proof as { id: string; payment: { payer: string; amount: string } };
    assert.equal(proof.payment.payer.toLowerCase(), wallet.toLowerCase());
    assert.equal(proof.payment.amount, String(PRICE_UNITS));
    assert.equal(await chain.balanceOf(wallet), 1_000_000n - PRICE_UNITS);

    const again = await paying.call('stamp_hash', request);
    assert.equal(again.isError, false, JSON.stringify(again.answer));
    assert.equal(again.answer.idempotentReplay, true);
    assert.equal((again.answer.proof as { id: string }).id, proof.id);
    assert.equal(await chain.balanceOf(wallet), 1_000_000n - PRICE_UNITS);
    assert.deepEqual(paying.protocolErrors, []);
  });

  test('without a wallet or an API key, a new proof is a tool error with code payment_required', async () => {
    const answer = await unpaid.call('stamp_hash', body());
    assert.equal(answer.isError, true);
    const { error } = answer.answer as { error: { code: string; message: string; details: object } };
    assert.equal(error.code, 'payment_required');
    assert.equal(typeof error.message, 'string');
    assert.equal(typeof error.details, 'object');
    assert.deepEqual(unpaid.protocolErrors, []);
  });
});
