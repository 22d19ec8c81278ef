/**
 * A paying client of the notarize route, for tests: the official x402 client (`@x402/fetch` with the
 * `exact` EVM scheme) signing real payments for a local chain's wallets (test/x402-chain.ts).
 */
import assert from 'node:assert/strict';
import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import type { PrivateKeyAccount } from 'viem/accounts';
import { api } from './helper.ts';
import { NETWORK } from './x402-chain.ts';

export const NOTARIZE = '/api/proof/notarize';

/** The official x402 client for one wallet: pays any 402 challenge of the service and retries. */
export function payingFetch(account: PrivateKeyAccount): typeof fetch {
  const client = new x402Client().register(NETWORK, new ExactEvmScheme(account));
  return wrapFetchWithPayment(fetch, client);
}

/**
 * One payment signed by the official client for the service's challenge, as the PAYMENT-SIGNATURE
 * header value, without sending it. `editChallenge` changes the challenge before the client reads it
 * (a client that signs other terms than ours).
 */
export async function signedPayment(
  account: PrivateKeyAccount,
  baseUrl: string,
  editChallenge: (challenge: PaymentRequired) => PaymentRequired = (challenge) => challenge,
): Promise<string> {
  let header = '';
  const capture: typeof fetch = async (input, init) => {
    const sent = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const value = sent.get('payment-signature');
    if (value !== null) {
      header = value;
      return new Response('{}', { status: 599 });
    }
    const unpaid = await fetch(input, init);
    const challenge = unpaid.headers.get('payment-required');
    if (unpaid.status !== 402 || challenge === null) return unpaid;
    const headers = new Headers(unpaid.headers);
    headers.set(
      'payment-required',
      encodePaymentRequiredHeader(editChallenge(decodePaymentRequiredHeader(challenge))),
    );
    return new Response(await unpaid.text(), { status: 402, headers });
  };
  const client = new x402Client().register(NETWORK, new ExactEvmScheme(account));
  await wrapFetchWithPayment(capture, client)(baseUrl + NOTARIZE, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      contentHash: 'sha256:' + '0'.repeat(64),
      label: 'probe',
      idempotencyKey: 'probe',
    }),
  });
  assert.notEqual(header, '', 'the client produced a PAYMENT-SIGNATURE');
  return header;
}

export function postPaid(baseUrl: string, header: string, payload: unknown): Promise<Response> {
  return fetch(baseUrl + NOTARIZE, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'payment-signature': header },
    body: JSON.stringify(payload),
  });
}

/** How many proofs the service holds for this content hash. */
export async function proofsOf(baseUrl: string, contentHash: string): Promise<number> {
  const res = await api(baseUrl, `/api/proofs/search?contentHash=${contentHash}`);
  assert.equal(res.status, 200);
  return (res.body.proofs as unknown[]).length;
}
