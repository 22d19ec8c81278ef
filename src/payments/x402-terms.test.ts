import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { api, expectError, startServer, type TestServer } from '../../test/helper.ts';
import { startChain, startFacilitator, type Facilitator } from '../../test/x402-chain.ts';
import { NOTARIZE } from '../../test/x402-client.ts';

/** Base Sepolia's USDC, which the official packages name for eip155:84532. */
const BASE_SEPOLIA_USDC = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
const PAY_TO = '0x1111111111111111111111111111111111111111';

let facilitator: Facilitator;
let server: TestServer;

// The operator's trial of docs/payments.md: Base Sepolia, another price, a facilitator that serves it.
before(async () => {
  facilitator = await startFacilitator(await startChain(), 'eip155:84532');
  server = await startServer({
    env: {
      PAYMENT_MODE: 'x402',
      X402_PAY_TO: PAY_TO,
      X402_NETWORK: 'eip155:84532',
      X402_PRICE: '$0.01',
      X402_FACILITATOR_URL: facilitator.url,
    },
  });
});

after(async () => {
  await server.close();
  server.cleanup();
  await facilitator.close();
});

test('X402_NETWORK and X402_PRICE set the terms: Base Sepolia USDC at $0.01, in the challenge and on the pages', async () => {
  const res = await api(server.baseUrl, NOTARIZE, { method: 'POST' });
  expectError(res, 402, 'payment_required');
  const challenge = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '');
  assert.deepEqual(
    challenge.accepts.map(({ network, amount, asset, payTo }) => ({ network, amount, asset, payTo })),
    [{ network: 'eip155:84532', amount: '10000', asset: BASE_SEPOLIA_USDC, payTo: PAY_TO }],
  );
  assert.equal(facilitator.calls.supported > 0, true, 'the service asked the facilitator what it supports');

  const pricing = await (await fetch(`${server.baseUrl}/pricing`)).text();
  assert.match(pricing, /\$0\.01/);
  assert.match(pricing, /Base Sepolia/);
  const discovery = await api(server.baseUrl, '/.well-known/x402');
  assert.equal(discovery.body.items[0].accepts[0].network, 'eip155:84532');
  assert.equal(discovery.body.items[0].accepts[0].amount, '10000');
});
