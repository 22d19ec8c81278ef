import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { notarizeBody, sampleHash, startServer, type TestServer } from '../../test/helper.ts';
import type { Payment, PaymentRecord } from '../core/payment-authorization.ts';
import { AppError } from '../errors.ts';
import { SettledNotStored } from './paid-requests.ts';
import { ProofsService } from './proofs-service.ts';

/**
 * The paid line of `ProofsService.notarize` (verify and claim, sign, settle, commit) against a real
 * database, with a payment whose settlement the test decides.
 */
let server: TestServer;
before(async () => (server = await startServer({ chargeWaitMs: 100 })));
after(async () => {
  await server.close();
  server.cleanup();
});

const PAYER = '0x' + 'a'.repeat(40);
const NETWORK = 'eip155:8453';
const payer = { kind: 'payer', network: NETWORK, payer: PAYER } as const;
let nonces = 0;

/** A payment whose settlements answer, in turn, as `outcomes` say; it counts what it was asked. */
function fakePayment(...outcomes: ('refused' | 'no answer' | 'settled')[]) {
  nonces++;
  const asked = { verify: 0, settle: 0 };
  const record: PaymentRecord = {
    network: NETWORK,
    payer: PAYER,
    transaction: '0x' + nonces.toString(16).padStart(64, '0'),
    amount: '5000',
  };
  const response = `receipt-${nonces}`;
  const payment: Payment = {
    authorization: {
      network: NETWORK,
      payer: PAYER,
      nonce: '0x' + nonces.toString(16).padStart(64, '0'),
      payloadDigest: nonces.toString(16).padStart(64, '0'),
      validBeforeMs: server.ctx.clock.now() + 300_000,
    },
    verify: async () => {
      asked.verify++;
      return {
        settle: async () => {
          const outcome = outcomes[asked.settle++];
          if (outcome === 'refused') throw new AppError('payment_required', 'settlement refused');
          if (outcome === 'no answer') throw new Error('the facilitator did not answer');
          return { record, response };
        },
      };
    },
  };
  return { payment, asked, record, response };
}

const claimOf = async (payment: Payment) => {
  const row = await server.ctx.database.db
    .selectFrom('payment_authorizations')
    .select(['state', 'proof_id'])
    .where('nonce', '=', payment.authorization.nonce)
    .executeTakeFirst();
  return row === undefined ? undefined : { ...row };
};

const proofsWith = async (contentHash: string) =>
  (await server.ctx.proofs.list({ contentHash }, 10, undefined)).proofs.length;

describe('a paid notarize, step by step', () => {
  test('a refused settlement stores nothing and frees the claim; the same payment then buys the proof once', async () => {
    const body = notarizeBody({ contentHash: sampleHash(501) }) as any;
    const { payment, asked, record, response } = fakePayment('refused', 'settled');
    await assert.rejects(server.ctx.proofs.notarize(body, payer, { payment }), { code: 'payment_required' });
    assert.equal(await proofsWith(body.contentHash), 0);
    assert.equal(await claimOf(payment), undefined, 'nothing moved: the authorization may be used again');

    const paid = await server.ctx.proofs.notarize(body, payer, { payment });
    assert.equal(paid.isReplay, false);
    assert.equal(paid.paymentResponse, response, 'the receipt of this settlement, as the route sends it');
    assert.deepEqual(paid.proof.payment, record);
    assert.deepEqual(await claimOf(payment), { state: 'settled', proof_id: paid.proof.id });

    const again = await server.ctx.proofs.notarize(body, payer, { payment });
    assert.equal(again.isReplay, true);
    assert.equal(again.proof.id, paid.proof.id);
    assert.equal(again.paymentResponse, undefined, 'a replay is not charged, so it has no receipt');
    assert.deepEqual(asked, { verify: 2, settle: 2 }, 'the payment it bought is answered without asking');
    assert.equal(await proofsWith(body.contentHash), 1);
  });

  test('a settlement without an answer stores nothing and keeps the claim: the key waits, then 409', async () => {
    const body = notarizeBody({ contentHash: sampleHash(502) }) as any;
    const { payment } = fakePayment('no answer');
    await assert.rejects(server.ctx.proofs.notarize(body, payer, { payment }), /did not answer/);
    assert.equal(await proofsWith(body.contentHash), 0);
    assert.deepEqual(await claimOf(payment), { state: 'settling', proof_id: null });
    const other = fakePayment('settled');
    await assert.rejects(server.ctx.proofs.notarize(body, payer, { payment: other.payment }), {
      code: 'idempotency_key_in_use',
    });
    assert.equal(other.asked.settle, 0, 'a second payment for the key is never settled');
  });

  test('settled, then not stored: the error carries the receipt and the claim stays taken', async () => {
    const { ctx } = server;
    const failure = new Error('the outbox refused the proof');
    // The same database and keys, with a transaction that fails after the payment settled.
    const proofs = new ProofsService({
      db: ctx.database.db,
      engine: ctx.database.engine,
      log: ctx.log,
      tsa: ctx.tsa,
      keyring: ctx.keyring,
      ids: ctx.ids,
      clock: ctx.clock,
      onCreated: async () => {
        throw failure;
      },
    });
    const body = notarizeBody({ contentHash: sampleHash(503) }) as any;
    const { payment, response } = fakePayment('settled');
    const error = await proofs.notarize(body, payer, { payment }).then(
      () => assert.fail('stored'),
      (thrown: unknown) => thrown,
    );
    assert.ok(error instanceof SettledNotStored);
    assert.equal(error.paymentResponse, response);
    assert.equal(error.cause, failure);
    assert.equal(await proofsWith(body.contentHash), 0);
    assert.deepEqual(await claimOf(payment), { state: 'settling', proof_id: null }, 'the money moved');
  });
});
