import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { api, expectError } from '../../test/helper.ts';
import { NETWORK } from '../../test/x402-chain.ts';
import { payingFetch } from '../../test/x402-client.ts';
import { body, chain, facilitator, payTo, server, withX402Service } from './x402-test-setup.ts';

const PRICE_UNITS = 5000n;
const BATCH = '/api/proof/batch';

withX402Service();

const json = (items: unknown[]) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ items }),
});

describe('a paid batch on a local Base chain', () => {
  test('the challenge asks the price times the count of new items, once the body is read', async () => {
    const [a, b, c] = [body(), body(), body()];
    const res = await api(server.baseUrl, BATCH, {
      body: { items: [a, b, { label: 'no hash' }, c, { ...a }] },
    });
    const error = expectError(res, 402, 'payment_required');
    assert.match(error.message, /\$0\.015 \(3 × \$0\.005\)/);
    const challenge = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '');
    assert.equal(challenge.x402Version, 2);
    assert.equal(challenge.accepts[0]?.amount, String(3n * PRICE_UNITS));
    assert.equal(challenge.accepts[0]?.payTo, payTo);
    assert.equal(challenge.accepts[0]?.network, NETWORK);
    assert.equal(challenge.resource?.url, `${server.ctx.config.publicBaseUrl}${BATCH}`);
    assert.ok(challenge.extensions?.bazaar, 'the batch route is described for directories');
    // A prober's empty or malformed body still learns the terms, for one proof.
    for (const probe of [{}, { items: 'x' }]) {
      const answer = await api(server.baseUrl, BATCH, { body: probe });
      expectError(answer, 402, 'payment_required');
      const terms = decodePaymentRequiredHeader(answer.headers.get('payment-required') ?? '');
      assert.equal(terms.accepts[0]?.amount, String(PRICE_UNITS));
    }
  });

  test('a batch whose every item fails its checks is answered without payment, and makes nothing', async () => {
    const res = await api(server.baseUrl, BATCH, {
      body: { items: [{ label: 'no hash' }, { ...body(), contentHash: 'sha256:123' }] },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(
      res.body.items.map((item: any) => [item.ok, item.error.code]),
      [
        [false, 'invalid_request'],
        [false, 'invalid_request'],
      ],
    );
  });

  test('the official client pays n × price once; each proof records its share; a replayed batch moves nothing', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const payerBefore = await chain.balanceOf(wallet.address);
    const payToBefore = await chain.balanceOf(payTo);
    const items = [body(), body(), body(), body()];
    const pay = payingFetch(wallet);
    const res = await pay(server.baseUrl + BATCH, json(items));
    const answer = (await res.json()) as any;
    assert.equal(res.status, 200, JSON.stringify(answer));
    assert.equal(answer.mode, 'x402');
    const receipt = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(receipt.success, true);
    assert.equal(await chain.balanceOf(wallet.address), payerBefore - 4n * PRICE_UNITS);
    assert.equal(await chain.balanceOf(payTo), payToBefore + 4n * PRICE_UNITS);
    for (const [i, item] of answer.items.entries()) {
      assert.equal(item.ok, true);
      assert.equal(item.idempotentReplay, false);
      assert.equal(item.proof.contentHash, items[i]?.contentHash);
      assert.deepEqual(item.proof.payment, {
        network: NETWORK,
        payer: receipt.payer,
        transaction: receipt.transaction,
        amount: String(PRICE_UNITS),
      });
    }
    // The same batch again, paid again by the client: every item is a replay and nothing is settled.
    const settles = facilitator.calls.settle;
    const again = await pay(server.baseUrl + BATCH, json(items));
    const replayed = (await again.json()) as any;
    assert.equal(again.status, 200, JSON.stringify(replayed));
    assert.deepEqual(
      replayed.items.map((item: any) => [item.idempotentReplay, item.proof.id]),
      answer.items.map((item: any) => [true, item.proof.id]),
    );
    assert.equal(again.headers.get('payment-response'), null);
    assert.equal(facilitator.calls.settle, settles);
    assert.equal(await chain.balanceOf(wallet.address), payerBefore - 4n * PRICE_UNITS);
  });

  test('a payment signed for another count is refused with the new terms, and nothing moves', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const known = [body(), body()];
    await payingFetch(wallet)(server.baseUrl + BATCH, json(known));
    const balance = await chain.balanceOf(wallet.address);
    // The challenge (no payer yet) counts all three as new; the payer's own two are already answered.
    const fresh = body();
    let second: Response | undefined;
    const watching: typeof fetch = async (input, init) => {
      const sent = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
      const res = await fetch(input, init);
      if (sent.has('payment-signature')) second = res.clone();
      return res;
    };
    const { x402Client, wrapFetchWithPayment } = await import('@x402/fetch');
    const { ExactEvmScheme } = await import('@x402/evm/exact/client');
    const client = new x402Client().register(NETWORK, new ExactEvmScheme(wallet));
    await wrapFetchWithPayment(watching, client)(server.baseUrl + BATCH, json([...known, fresh]));
    assert.ok(second, 'the client paid the first terms');
    assert.equal(second.status, 402);
    const terms = decodePaymentRequiredHeader(second.headers.get('payment-required') ?? '');
    assert.equal(terms.accepts[0]?.amount, String(PRICE_UNITS), 'the new terms: one new item');
    assert.equal(await chain.balanceOf(wallet.address), balance);
    // Paying the new terms makes the one new proof and answers the two others.
    const paid = await payingFetch(wallet)(server.baseUrl + BATCH, json([fresh]));
    assert.equal(paid.status, 200);
    assert.equal(await chain.balanceOf(wallet.address), balance - PRICE_UNITS);
  });
});
