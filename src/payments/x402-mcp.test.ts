/**
 * x402 over MCP (docs/payments.md, "x402 over MCP"), end to end on a local Base chain with the official
 * facilitator: the SDK's own MCP client calls `notarize` of /mcp and the official x402 client pays the
 * terms the tool answers, as the x402 MCP transport specifies (payment in `params._meta`, receipt in
 * `result._meta`). One payment buys one proof whichever transport carries it.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import type { PrivateKeyAccount } from 'viem/accounts';
import { adminHeaders, api, expectError } from '../../test/helper.ts';
import { NETWORK } from '../../test/x402-chain.ts';
import { NOTARIZE } from '../../test/x402-client.ts';
import {
  body,
  chain,
  payTo,
  postPaid,
  proofsOf,
  refuseProofs,
  server,
  facilitator,
  signedPayment,
  withX402Service,
} from './x402-test-setup.ts';

const PRICE_UNITS = 5000n;

withX402Service();

async function connect(headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'x402-mcp-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp`), { requestInit: { headers } }),
  );
  return client;
}

/** Runs `work` with a connected client, closed after. */
async function withClient<T>(work: (client: Client) => Promise<T>, headers = {}): Promise<T> {
  const client = await connect(headers);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

const notarize = (client: Client, args: Record<string, unknown>, payment?: PaymentPayload) =>
  client.callTool({
    name: 'notarize',
    arguments: args,
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  }) as Promise<CallToolResult>;

const texts = (result: CallToolResult) =>
  (result.content as { type: string; text: string }[]).map((part) => JSON.parse(part.text));

/** A payment-required answer, read as the x402 MCP transport lays it out; checks both copies agree. */
function paymentRequiredOf(result: CallToolResult): PaymentRequired {
  assert.equal(result.isError, true);
  const required = result.structuredContent as unknown as PaymentRequired;
  const [wrapped, envelope] = texts(result);
  assert.equal(wrapped['x402/error'].code, 402);
  assert.deepEqual(wrapped['x402/error'].data, required);
  assert.equal(envelope.error.code, 'payment_required');
  return required;
}

/** The official x402 client of one wallet, paying terms as a client of the MCP transport does. */
const pay = (wallet: PrivateKeyAccount, terms: PaymentRequired): Promise<PaymentPayload> =>
  new x402Client().register(NETWORK, new ExactEvmScheme(wallet)).createPaymentPayload(terms);

describe('x402 over MCP: notarize of /mcp on a local Base chain', () => {
  test('unpaid: the terms of the HTTP route, for the tool, and no proof', async () => {
    const request = body();
    const http = await api(server.baseUrl, NOTARIZE, { body: request });
    expectError(http, 402, 'payment_required');
    const httpTerms = decodePaymentRequiredHeader(http.headers.get('payment-required') ?? '');
    const required = await withClient(async (client) => paymentRequiredOf(await notarize(client, request)));
    assert.equal(required.x402Version, 2);
    assert.deepEqual(required.accepts, httpTerms.accepts, 'the same terms as HTTP 402');
    assert.equal(required.accepts[0]?.amount, String(PRICE_UNITS));
    assert.equal(required.accepts[0]?.payTo, payTo);
    assert.equal(required.resource?.url, 'mcp://tool/notarize');
    const bazaar = required.extensions?.bazaar as { info: { input: Record<string, unknown> } };
    assert.equal(bazaar.info.input.type, 'mcp');
    assert.equal(bazaar.info.input.toolName, 'notarize');
    assert.equal(bazaar.info.input.transport, 'streamable-http');
    assert.equal(await proofsOf(request.contentHash as string), 0);
  });

  test('paid: a proof, the receipt in _meta, the price moved once; a replay is free', async () => {
    const wallet = await chain.fundedWallet(PRICE_UNITS * 2n);
    const request = body();
    await withClient(async (client) => {
      const payment = await pay(wallet, paymentRequiredOf(await notarize(client, request)));
      const paid = await notarize(client, request, payment);
      assert.notEqual(paid.isError, true, JSON.stringify(paid.content));
      const answer = paid.structuredContent as { proof: { id: string; contentHash: string } };
      assert.equal(answer.proof.contentHash, request.contentHash);
      const receipt = paid._meta?.['x402/payment-response'] as Record<string, unknown>;
      assert.equal(receipt.success, true);
      assert.equal(receipt.network, NETWORK);
      assert.match(String(receipt.transaction), /^0x[0-9a-f]{64}$/);
      assert.equal(String(receipt.payer).toLowerCase(), wallet.address.toLowerCase());
      assert.equal(await chain.balanceOf(wallet.address), PRICE_UNITS);
      // The same call again (a retry): the same proof, answered as a replay, nothing charged.
      const again = await notarize(client, request, payment);
      const replay = again.structuredContent as { idempotentReplay: boolean; proof: { id: string } };
      assert.equal(replay.idempotentReplay, true);
      assert.equal(replay.proof.id, answer.proof.id);
      assert.equal(again._meta?.['x402/payment-response'], undefined);
      assert.equal(await chain.balanceOf(wallet.address), PRICE_UNITS);
    });
    assert.equal(await proofsOf(request.contentHash as string), 1);
  });

  test('one payment buys one proof across HTTP and MCP', async () => {
    const wallet = await chain.fundedWallet(PRICE_UNITS * 4n);
    // Spent over HTTP first, then offered over MCP for another proof.
    const header = await signedPayment(wallet);
    const [first, second] = [body(), body()];
    assert.equal((await postPaid(header, first)).status, 200);
    const refused = await withClient((client) =>
      notarize(client, second, decodePaymentSignatureHeader(header)),
    );
    const required = paymentRequiredOf(refused);
    assert.match(String(required.error), /authorization_used/);
    assert.ok(required.accepts.length > 0, 'fresh terms to pay with');
    // Spent over MCP first, then offered over HTTP.
    const [third, fourth] = [body(), body()];
    const payment = await withClient(async (client) => {
      const terms = paymentRequiredOf(await notarize(client, third));
      const signed = await pay(wallet, terms);
      assert.notEqual((await notarize(client, third, signed)).isError, true);
      return signed;
    });
    const { encodePaymentSignatureHeader } = await import('@x402/core/http');
    const again = await postPaid(encodePaymentSignatureHeader(payment), fourth);
    assert.equal(again.status, 402);
    assert.equal(((await again.json()) as any).error.details.reason, 'authorization_used');
    assert.equal(await chain.balanceOf(wallet.address), PRICE_UNITS * 2n);
    const made = await Promise.all(
      [first, second, third, fourth].map((b) => proofsOf(b.contentHash as string)),
    );
    assert.deepEqual(made, [1, 0, 1, 0]);
  });

  test('two sessions racing one payment: one proof, one settlement', async () => {
    const wallet = await chain.fundedWallet(PRICE_UNITS * 2n);
    const [a, b] = [await connect(), await connect()];
    try {
      const payment = await pay(wallet, paymentRequiredOf(await notarize(a, body())));
      const requests = [body(), body()];
      const results = await Promise.all([
        notarize(a, requests[0]!, payment),
        notarize(b, requests[1]!, payment),
      ]);
      const won = results.filter((result) => result.isError !== true);
      const lost = results.filter((result) => result.isError === true);
      assert.equal(won.length, 1, JSON.stringify(results.map((r) => r.content)));
      assert.equal(lost.length, 1);
      assert.match(String(paymentRequiredOf(lost[0]!).error), /authorization_used/);
      const made = await Promise.all(requests.map((r) => proofsOf(r.contentHash as string)));
      assert.deepEqual(made.toSorted(), [0, 1]);
      assert.equal(await chain.balanceOf(wallet.address), PRICE_UNITS);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test('a payment that is no payment, or on another network: refused with the terms and why', async () => {
    const wallet = await chain.fundedWallet(PRICE_UNITS);
    await withClient(async (client) => {
      const request = body();
      const garbage = await client.callTool({
        name: 'notarize',
        arguments: request,
        _meta: { 'x402/payment': 'not a payment' },
      });
      const terms = paymentRequiredOf(garbage as CallToolResult);
      assert.equal(terms.resource?.url, 'mcp://tool/notarize');
      const elsewhere = await pay(wallet, {
        ...terms,
        accepts: terms.accepts.map((accept) => ({ ...accept, network: 'eip155:84532' as const })),
      }).then(
        (payment) => payment,
        () => undefined,
      );
      if (elsewhere !== undefined) {
        const refused = paymentRequiredOf(await notarize(client, request, elsewhere));
        assert.match(String(refused.error), /invalid_network/);
      }
      // A payment for another amount is verified against our terms, and refused.
      const cheap = await pay(wallet, {
        ...terms,
        accepts: terms.accepts.map((accept) => ({ ...accept, amount: '1' })),
      });
      const refused = paymentRequiredOf(await notarize(client, request, cheap));
      assert.ok(refused.accepts.length > 0);
      assert.equal(await proofsOf(request.contentHash as string), 0);
    });
    assert.equal(await chain.balanceOf(wallet.address), PRICE_UNITS);
  });

  test('a settlement refused on chain: the failed settlement with fresh terms, no proof, nothing moved', async (t: TestContext) => {
    const wallet = await chain.fundedWallet(PRICE_UNITS);
    const request = body();
    await withClient(async (client) => {
      const payment = await pay(wallet, paymentRequiredOf(await notarize(client, request)));
      facilitator.behaviour = 'payer-blacklisted-before-settle';
      t.after(() => (facilitator.behaviour = 'real'));
      const refused = await notarize(client, request, payment);
      const required = paymentRequiredOf(refused) as PaymentRequired & Record<string, any>;
      assert.match(String(required.error), /^settlement_failed: /);
      assert.equal(required['x402/payment-response'].success, false);
      assert.ok(String(required['x402/payment-response'].errorReason).length <= 160);
      assert.ok(required.accepts.length > 0, 'fresh terms to pay with');
    });
    assert.equal(await proofsOf(request.contentHash as string), 0);
    assert.equal(await chain.balanceOf(wallet.address), PRICE_UNITS);
  });

  test('settled, then the proof is not stored: the tool error carries the receipt, the log the payment', async (t: TestContext) => {
    const wallet = await chain.fundedWallet(PRICE_UNITS);
    const request = body();
    const payment = await withClient(async (client) =>
      pay(wallet, paymentRequiredOf(await notarize(client, request))),
    );
    await refuseProofs(t);
    const failed = await withClient((client) => notarize(client, request, payment));
    assert.equal(failed.isError, true);
    const [envelope] = texts(failed);
    assert.equal(envelope.error.code, 'internal_error');
    assert.doesNotMatch(JSON.stringify(failed), /refused|insert|trigger/i, 'no SQL or cause to the caller');
    const receipt = failed._meta?.['x402/payment-response'] as Record<string, unknown>;
    assert.equal(receipt.success, true);
    assert.equal(await chain.balanceOf(wallet.address), 0n, 'the money moved');
    assert.equal(await proofsOf(request.contentHash as string), 0);
    const isReconciliation = (line: string) => line.includes('payment settled but the proof was not stored');
    const lines = await server.logged((all) => all.some(isReconciliation), 'the reconciliation line');
    const line = JSON.parse(lines.find(isReconciliation) ?? '{}');
    assert.equal(JSON.parse(Buffer.from(line.payment, 'base64').toString()).transaction, receipt.transaction);
  });

  test('an API key on the connection bills its account: no payment asked', async () => {
    const account = (
      await api(server.baseUrl, '/api/accounts', { body: { name: 'paying agent' }, headers: adminHeaders })
    ).body.account;
    const key = await api(server.baseUrl, `/api/accounts/${account.id}/api-keys`, {
      body: { scopes: ['proofs:write'] },
      headers: adminHeaders,
    });
    assert.equal(key.status, 201, key.text);
    const made = await withClient((client) => notarize(client, body()), { 'x-service-key': key.body.key });
    assert.notEqual(made.isError, true, JSON.stringify(made.content));
    assert.equal((made.structuredContent as any).proof.accountId, account.id);
    assert.equal(made._meta?.['x402/payment-response'], undefined);
  });
});
