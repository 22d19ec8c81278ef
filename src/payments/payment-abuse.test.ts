import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { api, sampleHash, startServer, type TestServer } from '../../test/helper.ts';
import { startChain, startFacilitator, type Chain, type Facilitator } from '../../test/x402-chain.ts';
import { payingFetch, postPaid, proofsOf, signedPayment, NOTARIZE } from '../../test/x402-client.ts';

const PRICE_UNITS = 5000n;
const FUNDS = 1_000_000n;

let chain: Chain;
let facilitator: Facilitator;
let payTo: string;
/** Two instances of the service on one database (the same SQLite file, or the same PostgreSQL schema). */
let one: TestServer;
let two: TestServer;
let counter = 0;

function body(): Record<string, unknown> {
  counter++;
  return {
    contentHash: sampleHash(7000 + counter),
    label: `abuse ${counter}`,
    idempotencyKey: `abuse-${counter}-${Date.now()}`,
  };
}

/** A payment header whose signed payload was changed after signing (what a forger sends). */
function tampered(header: string, change: (payload: Record<string, any>) => void): string {
  const decoded = decodePaymentSignatureHeader(header);
  const payload = structuredClone(decoded.payload) as Record<string, any>;
  change(payload);
  return encodePaymentSignatureHeader({ ...decoded, payload });
}

before(async () => {
  chain = await startChain();
  facilitator = await startFacilitator(chain);
  payTo = (await chain.fundedWallet(0n)).address;
  const env = {
    PAYMENT_MODE: 'x402',
    X402_PAY_TO: payTo,
    X402_FACILITATOR_URL: facilitator.url,
    X402_FACILITATOR_TIMEOUT_MS: '5000',
  };
  one = await startServer({ env, chargeWaitMs: 1000 });
  two = await startServer({ env, chargeWaitMs: 1000, dataDir: one.dataDir });
});

after(async () => {
  await two.close();
  await one.close();
  one.cleanup();
  await facilitator.close();
});

describe('one payment, one proof, on every instance', () => {
  test('two payments for one key at once, one to each instance: one is settled, the other waits and replays', async () => {
    const wallet = await chain.fundedWallet(FUNDS);
    const [first, second] = [
      await signedPayment(wallet, one.baseUrl),
      await signedPayment(wallet, two.baseUrl),
    ];
    const request = body();
    const settles = facilitator.calls.settle;
    const release = facilitator.holdSettles();
    const settling = facilitator.settleStarted();
    const paying = postPaid(one.baseUrl, first, request);
    await settling; // the first payment is being settled on instance one
    const anotherSettle = facilitator.settleStarted().then(() => 'settled again' as const);
    const waiting = postPaid(two.baseUrl, second, request);
    // Instance two must not settle its payment: it answers 409 once it has waited for the first.
    const outcome = await Promise.race([waiting.then(() => 'answered' as const), anotherSettle]);
    assert.equal(outcome, 'answered');
    const refused = await waiting;
    assert.equal(refused.status, 409);
    assert.equal(((await refused.json()) as any).error.code, 'idempotency_key_in_use');
    release();
    const paid = await paying;
    const proof = ((await paid.json()) as any).proof;
    assert.equal(paid.status, 200);
    // The second payment, sent again, is answered with the first proof and is never settled.
    const retried = await postPaid(two.baseUrl, second, request);
    const replay = (await retried.json()) as any;
    assert.equal(retried.status, 200);
    assert.equal(replay.idempotentReplay, true);
    assert.equal(replay.proof.id, proof.id);
    assert.equal(facilitator.calls.settle, settles + 1);
    assert.equal(await chain.balanceOf(wallet.address), FUNDS - PRICE_UNITS);
    assert.equal(await proofsOf(one.baseUrl, request.contentHash as string), 1);
  });

  test('a facilitator that settles one authorization twice: sent to both instances at once, and again, it buys one proof', async (t) => {
    facilitator.behaviour = 'lax';
    t.after(() => (facilitator.behaviour = 'real'));
    const wallet = await chain.fundedWallet(FUNDS);
    const payToBefore = await chain.balanceOf(payTo);
    const header = await signedPayment(wallet, one.baseUrl);
    const [a, b, c] = [body(), body(), body()];
    const answers = await Promise.all([postPaid(one.baseUrl, header, a), postPaid(two.baseUrl, header, b)]);
    assert.deepEqual(answers.map((res) => res.status).sort(), [200, 402]);
    const refused = (await answers.find((res) => res.status === 402)?.json()) as any;
    assert.equal(refused.error.code, 'payment_required');
    assert.equal(refused.error.details.reason, 'authorization_used');

    const verifies = facilitator.calls.verify;
    const again = await postPaid(two.baseUrl, header, c);
    assert.equal(again.status, 402);
    assert.equal(((await again.json()) as any).error.details.reason, 'authorization_used');
    assert.equal(facilitator.calls.verify, verifies, 'a known authorization is refused without asking');

    const counts = await Promise.all(
      [a, b, c].map((sent) => proofsOf(one.baseUrl, sent.contentHash as string)),
    );
    assert.deepEqual(counts.sort(), [0, 0, 1]);
    assert.equal(await chain.balanceOf(wallet.address), FUNDS - PRICE_UNITS);
    assert.equal(await chain.balanceOf(payTo), payToBefore + PRICE_UNITS);
  });
});

describe('payment fields are not taken on trust', () => {
  test("a header that names someone else's address does not replay their proof", async () => {
    const victim = await chain.fundedWallet(FUNDS);
    const request = body();
    const paid = await payingFetch(victim)(one.baseUrl + NOTARIZE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const proofId = ((await paid.json()) as any).proof.id as string;
    assert.equal(paid.status, 200);

    const forger = await chain.fundedWallet(FUNDS);
    const forged = tampered(await signedPayment(forger, one.baseUrl), (payload) => {
      payload.authorization.from = victim.address;
    });
    for (const target of [one, two]) {
      const res = await postPaid(target.baseUrl, forged, request);
      const text = await res.text();
      assert.equal(res.status, 402, text);
      assert.equal(JSON.parse(text).error.code, 'payment_required');
      assert.ok(!text.includes(proofId), 'the victim’s proof is not answered');
    }
    assert.equal(await chain.balanceOf(forger.address), FUNDS);
    assert.equal(await chain.balanceOf(victim.address), FUNDS - PRICE_UNITS);
  });

  test('an authorization valid longer than the terms allow, or already expired, is refused before the facilitator is asked', async () => {
    const wallet = await chain.fundedWallet(FUNDS);
    const threeYears = 3 * 365 * 86_400;
    for (const [seconds, expected] of [
      [threeYears, /valid for too long: at most 300 seconds/],
      [-60, /expired/],
    ] as const) {
      const header = await signedPayment(wallet, one.baseUrl, (challenge) => ({
        ...challenge,
        accepts: challenge.accepts.map((accepted) => ({ ...accepted, maxTimeoutSeconds: seconds })),
      }));
      const calls = { ...facilitator.calls };
      const res = await postPaid(one.baseUrl, header, body());
      const json = (await res.json()) as any;
      assert.equal(res.status, 402);
      assert.match(json.error.message, expected);
      assert.ok(res.headers.get('payment-required'), 'the challenge comes with the refusal');
      assert.deepEqual(facilitator.calls, calls);
    }
    assert.equal(await chain.balanceOf(wallet.address), FUNDS);
  });

  test('a payload without an authorization, or with a malformed one, is no payment', async () => {
    const wallet = await chain.fundedWallet(FUNDS);
    const header = await signedPayment(wallet, one.baseUrl);
    const calls = { ...facilitator.calls };
    for (const change of [
      (payload: Record<string, any>) => delete payload.authorization,
      (payload: Record<string, any>) => (payload.authorization.from = ''),
      (payload: Record<string, any>) => (payload.authorization.nonce = 'not-a-nonce'),
      (payload: Record<string, any>) => (payload.permit2Authorization = { from: wallet.address }),
    ]) {
      const res = await postPaid(one.baseUrl, tampered(header, change), body());
      const json = (await res.json()) as any;
      assert.equal(res.status, 402);
      assert.match(json.error.message, /invalid_payload/);
    }
    assert.deepEqual(facilitator.calls, calls);
    const read = await api(one.baseUrl, '/health');
    assert.equal(read.status, 200);
  });
});
