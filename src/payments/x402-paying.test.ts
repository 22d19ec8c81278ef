import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { privateKeyToAccount } from 'viem/accounts';
import { createClient } from '../client/client.ts';
import { api, makeDataDir } from '../../test/helper.ts';
import { NETWORK } from '../../test/x402-chain.ts';
import { NOTARIZE, payingFetch } from '../../test/x402-client.ts';
import {
  body,
  refuseProofs,
  chain,
  facilitator,
  payTo,
  postPaid,
  proofsOf,
  server,
  signedPayment,
  withX402Service,
} from './x402-test-setup.ts';

const PRICE_UNITS = 5000n;

withX402Service();

describe('paying with the official client on a local Base chain', () => {
  test('@x402/fetch pays 5000 units of USDC once and gets the proof with PAYMENT-RESPONSE', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const payerBefore = await chain.balanceOf(wallet.address);
    const payToBefore = await chain.balanceOf(payTo);
    const request = body();
    const res = await payingFetch(wallet)(server.baseUrl + NOTARIZE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
    });
    const json = (await res.json()) as any;
    assert.equal(res.status, 200, JSON.stringify(json));
    assert.equal(json.mode, 'x402');
    assert.equal(json.idempotentReplay, false);
    const receipt = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(receipt.success, true);
    assert.equal(receipt.network, NETWORK);
    assert.match(receipt.transaction, /^0x[0-9a-f]{64}$/);
    assert.equal(receipt.payer?.toLowerCase(), wallet.address.toLowerCase());
    assert.deepEqual(json.proof.payment, {
      network: NETWORK,
      payer: receipt.payer,
      transaction: receipt.transaction,
      amount: '5000',
    });
    assert.equal(await chain.balanceOf(wallet.address), payerBefore - PRICE_UNITS);
    assert.equal(await chain.balanceOf(payTo), payToBefore + PRICE_UNITS);
    // verify → create → settle: the proof (its time and signatures) was made before settlement began.
    assert.ok(
      Date.parse(json.proof.timestamp) <= facilitator.lastSettleAt,
      `proof at ${json.proof.timestamp}, settle at ${new Date(facilitator.lastSettleAt).toISOString()}`,
    );
    const onChain = await chain.client.getTransactionReceipt({ hash: receipt.transaction as `0x${string}` });
    assert.equal(onChain.status, 'success');

    const stored = await api(server.baseUrl, `/api/proofs/${json.proof.id}`);
    assert.equal(stored.status, 200);
    assert.deepEqual(stored.body.proof.payment, json.proof.payment);
    assert.equal(stored.body.proof.verified, true);
  });

  test('a paid replay of the same request returns the stored proof and charges nothing', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const request = body();
    const pay = payingFetch(wallet);
    const send = () =>
      pay(server.baseUrl + NOTARIZE, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request),
      });
    const first = (await (await send()).json()) as any;
    const balance = await chain.balanceOf(wallet.address);
    const settles = facilitator.calls.settle;
    const again = await send();
    const json = (await again.json()) as any;
    assert.equal(again.status, 200);
    assert.equal(json.idempotentReplay, true);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(json.proof.id, first.proof.id);
    assert.equal(again.headers.get('payment-response'), null, 'nothing was settled');
    assert.equal(facilitator.calls.settle, settles);
    assert.equal(await chain.balanceOf(wallet.address), balance);

    const reused = await pay(server.baseUrl + NOTARIZE, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...request, label: 'other content' }),
    });
    assert.equal(reused.status, 422);
    assert.equal(((await reused.json()) as any).error.code, 'idempotency_key_reused');
    assert.equal(await chain.balanceOf(wallet.address), balance);
  });

  test('a paid request with an invalid body gets 400 and is not charged (the facilitator is not even asked)', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    const calls = { ...facilitator.calls };
    const res = await postPaid(header, { contentHash: 'sha256:nothex', label: '', idempotencyKey: 'x' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as any).error.code, 'invalid_request');
    assert.deepEqual(facilitator.calls, calls);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n);
  });

  test('one payment buys one proof: a settled payload sent again is refused, and so is one sent twice at once', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    const [a, b] = [body(), body()];
    const answers = await Promise.all([postPaid(header, a), postPaid(header, b)]);
    const statuses = answers.map((res) => res.status).sort();
    assert.deepEqual(statuses, [200, 402]);
    const refused = answers.find((res) => res.status === 402);
    assert.equal(((await refused?.json()) as any).error.code, 'payment_required');
    assert.equal((await proofsOf(a.contentHash as string)) + (await proofsOf(b.contentHash as string)), 1);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS);

    const c = body();
    const later = await postPaid(header, c);
    assert.equal(later.status, 402, 'the nonce is spent on chain');
    assert.equal(await proofsOf(c.contentHash as string), 0);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS);
  });

  test('a wallet without funds is refused at verification: 402 with the reason, no proof', async () => {
    const wallet = await chain.fundedWallet(0n);
    const header = await signedPayment(wallet);
    const request = body();
    const res = await postPaid(header, request);
    const json = (await res.json()) as any;
    assert.equal(res.status, 402);
    assert.equal(json.error.code, 'payment_required');
    assert.match(json.error.message, /not accepted/);
    const challenge = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '');
    assert.ok(challenge.error && challenge.error.length <= 160, challenge.error);
    assert.equal(await proofsOf(request.contentHash as string), 0);
  });

  test('a settlement that fails on chain: 402 with PAYMENT-RESPONSE success false, no proof, no charge', async (t) => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const header = await signedPayment(wallet);
    const request = body();
    facilitator.behaviour = 'payer-blacklisted-before-settle';
    t.after(() => (facilitator.behaviour = 'real'));
    const res = await postPaid(header, request);
    const json = (await res.json()) as any;
    assert.equal(res.status, 402);
    assert.equal(json.error.code, 'payment_required');
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    assert.equal(settlement.success, false);
    assert.ok((settlement.errorReason ?? '').length > 0 && (settlement.errorReason ?? '').length <= 160);
    assert.ok((settlement.errorMessage ?? '').length <= 160);
    assert.equal(json.error.details.settlement.success, false);
    assert.ok(res.headers.get('payment-required'), 'a fresh challenge to pay again');
    assert.equal(await proofsOf(request.contentHash as string), 0);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n);
  });

  test('settled, then the proof is not stored: the answer carries the receipt, the log the payment', async (t) => {
    await refuseProofs(t);
    const wallet = await chain.fundedWallet(1_000_000n);
    const request = body();
    const res = await postPaid(await signedPayment(wallet), request);
    assert.ok(res.status >= 500, String(res.status));
    const header = res.headers.get('payment-response') ?? '';
    const receipt = decodePaymentResponseHeader(header);
    assert.equal(receipt.success, true);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS, 'the money moved');
    assert.equal(await proofsOf(request.contentHash as string), 0);
    const isReconciliation = (line: string) => line.includes('payment settled but the proof was not stored');
    const lines = await server.logged((all) => all.some(isReconciliation), 'the reconciliation line');
    const line = JSON.parse(lines.find(isReconciliation) ?? '{}');
    assert.equal(line.payment, header, 'the operator reconciles from the receipt the payer got');
  });
});

describe('paying from the client library and the command line', () => {
  test('createClient({ payer }) pays the challenge and retries safely without paying twice', async () => {
    const wallet = await chain.fundedWallet(1_000_000n);
    const client = createClient({ baseUrl: server.baseUrl, payer: wallet });
    const request = body();
    const made = await client.notarize(request as never);
    assert.equal(made.idempotentReplay, false);
    assert.equal(made.proof.payment?.payer.toLowerCase(), wallet.address.toLowerCase());
    const again = await client.notarize(request as never);
    assert.equal(again.idempotentReplay, true);
    assert.equal(await chain.balanceOf(wallet.address), 1_000_000n - PRICE_UNITS);
  });

  test('hashproof stamp pays with HASHPROOF_WALLET_KEY; a re-run pays nothing', async () => {
    const key = await chain.fundedPrivateKey(1_000_000n);
    const address = privateKeyToAccount(key).address;
    const dir = makeDataDir();
    const file = path.join(dir, 'report.txt');
    writeFileSync(file, `a paid report ${Date.now()}`);
    const cli = async (): Promise<{ code: number | null; stdout: string; stderr: string }> => {
      const child = spawn(
        process.execPath,
        [path.resolve(import.meta.dirname, '../cli/main.ts'), 'stamp', file, '--json'],
        {
          env: { PATH: process.env.PATH, HASHPROOF_URL: server.baseUrl, HASHPROOF_WALLET_KEY: key },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      return { code, stdout, stderr };
    };
    const first = await cli();
    assert.equal(first.code, 0, first.stderr);
    const proof = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8')) as {
      proof: { payment: { payer: string } };
    };
    assert.equal(proof.proof.payment.payer.toLowerCase(), address.toLowerCase());
    assert.equal(await chain.balanceOf(address), 1_000_000n - PRICE_UNITS);
    const second = await cli();
    assert.equal(second.code, 0, second.stderr);
    assert.equal(await chain.balanceOf(address), 1_000_000n - PRICE_UNITS);
  });
});
