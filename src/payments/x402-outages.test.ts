import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  body,
  chain,
  facilitator,
  postPaid,
  proofsOf,
  signedPayment,
  withX402Service,
} from './x402-test-setup.ts';

withX402Service();

describe('facilitator outages', () => {
  test('a facilitator answering 500 pages: 502 payment_unavailable, its text cut short', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    facilitator.behaviour = 'error-500';
    t.after(() => (facilitator.behaviour = 'real'));
    const res = await postPaid(header, body());
    const json = (await res.json()) as any;
    assert.equal(res.status, 502);
    assert.equal(json.error.code, 'payment_unavailable');
    assert.equal(json.error.details.step, 'verify');
    assert.ok(json.error.details.reason.length <= 160);
    const page = 'upstream exploded '.repeat(200);
    assert.ok(JSON.stringify(json).length < page.length / 3, 'the facilitator page is not passed on');
  });

  test('a facilitator that does not answer verify: 502 after the configured timeout', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    facilitator.behaviour = 'hang';
    t.after(() => (facilitator.behaviour = 'real'));
    const res = await postPaid(header, body());
    assert.equal(res.status, 502);
    const json = (await res.json()) as any;
    assert.equal(json.error.code, 'payment_unavailable');
    assert.match(json.error.message, /timed out/);
    assert.equal(res.headers.get('retry-after'), '5');
  });

  test('a settlement that is not confirmed in time is unknown, not failed; the same key meanwhile gets 409', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const [first, second] = [await signedPayment(wallet), await signedPayment(wallet)];
    const request = body();
    facilitator.behaviour = 'hang-settle';
    t.after(() => (facilitator.behaviour = 'real'));
    const settling = facilitator.settleStarted();
    const slow = postPaid(first, request);
    await settling;
    const waiting = await postPaid(second, request);
    assert.equal(waiting.status, 409);
    assert.equal(((await waiting.json()) as any).error.code, 'idempotency_key_in_use');
    assert.equal(waiting.headers.get('retry-after'), '1');
    const res = await slow;
    const json = (await res.json()) as any;
    assert.equal(res.status, 502);
    assert.equal(json.error.code, 'payment_unavailable');
    assert.equal(json.error.details.settlement, 'unknown');
    assert.equal(json.error.details.payer.toLowerCase(), wallet.address.toLowerCase());
    assert.equal(res.headers.get('payment-required'), null, 'not a plain 402 that invites paying again');
    assert.equal(await proofsOf(request.contentHash as string), 0);
  });
});
