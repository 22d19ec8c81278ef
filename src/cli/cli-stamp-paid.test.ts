/**
 * `hashproof stamp` of many files paid from a wallet (HASHPROOF_WALLET_KEY) on a local Base chain: the
 * batches are sized to what one payment of the official x402 client may carry ($1 by default), the
 * wallet pays exactly the price of each new proof, and a second run pays nothing.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { privateKeyToAccount } from 'viem/accounts';
import { makeDataDir } from '../../test/helper.ts';
import { run } from '../../test/process.ts';
import { chain, facilitator, payTo, server, withX402Service } from '../payments/x402-test-setup.ts';
import { CLI } from './cli-test-setup.ts';

const PRICE_UNITS = 5000n;

withX402Service();

describe('hashproof stamp paid with a wallet', () => {
  test('250 files: batches of at most 200 (one $1 payment each), exactly 250 × the price, a re-run pays nothing', async () => {
    const work = makeDataDir();
    const dir = path.join(work, 'release');
    mkdirSync(dir);
    for (let i = 0; i < 250; i++)
      writeFileSync(path.join(dir, `part-${i}.bin`), `paid part ${i} ${Math.random()}`);
    const key = await chain.fundedPrivateKey(2_000_000n);
    const wallet = privateKeyToAccount(key).address;
    const payToBefore = await chain.balanceOf(payTo);
    const settlesBefore = facilitator.calls.settle;
    const env = {
      PATH: process.env.PATH,
      HASHPROOF_URL: server.baseUrl,
      HASHPROOF_STATE_DIR: path.join(work, 'state'),
      HASHPROOF_WALLET_KEY: key,
    };
    const first = await run(process.execPath, [CLI, 'stamp', dir], { env });
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stdout.match(/^stamped /gm)?.length, 250);
    assert.equal(await chain.balanceOf(wallet), 2_000_000n - 250n * PRICE_UNITS);
    assert.equal(await chain.balanceOf(payTo), payToBefore + 250n * PRICE_UNITS);
    assert.equal(facilitator.calls.settle - settlesBefore, 2, 'two payments: 200 and 50 proofs');

    const again = await run(process.execPath, [CLI, 'stamp', dir], { env });
    assert.equal(again.code, 0, again.stderr);
    assert.equal(await chain.balanceOf(wallet), 2_000_000n - 250n * PRICE_UNITS);
    assert.equal(facilitator.calls.settle - settlesBefore, 2);
  });
});
