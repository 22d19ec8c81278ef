import type { IdGenerator } from '../core/ids.ts';
import type { PaymentRecord } from '../core/payment-authorization.ts';
import { hmacOfMessage, signingMessage } from '../core/proof-signature.ts';
import { encodeReceipt } from '../core/receipt.ts';
import { signHere, type SignFn } from '../core/signing.ts';
import type { Keyring } from '../keys/keyring.ts';
import type { Clock } from '../platform/clock.ts';
import { proofTokenRequest, type Tsa } from '../tsa/tsa.ts';
import { paidVia, type DescribedRequest, type Principal } from './notarize-request.ts';
import type { NotarizeBody } from './proof-schemas.ts';
import type { NewProofRow } from './proofs-store.ts';

export interface ProofSignerDeps {
  keyring: Keyring;
  tsa: Tsa;
  ids: IdGenerator;
  clock: Clock;
  /** Makes the receipt's and the token's public-key signatures (on the request thread when absent). */
  sign?: SignFn;
}

/**
 * A new proof, ready to store: its id and time, the HMAC with the active key, the Ed25519 receipt and
 * the RFC 3161 token's signature, all over the same fields (docs/verification.md); the token's genTime
 * is the timestamp rounded up to the whole second (`TokenTimeFormat`). Not yet paid for.
 */
export async function signNewProof(
  deps: ProofSignerDeps,
  body: NotarizeBody,
  principal: Principal,
  request: DescribedRequest,
  scope: string,
): Promise<NewProofRow> {
  const createdAt = deps.clock.now();
  // The keys of the proof's own time, so its receipt lies in the key's published window.
  const { hmac: key, receipt: receiptKey } = deps.keyring.signingKeys(createdAt);
  const id = deps.ids.next('proof', createdAt);
  const timestamp = new Date(createdAt).toISOString();
  const signed = {
    id,
    timestamp,
    contentHash: request.contentHash,
    metadataHash: request.metadataHash,
    label: body.label,
  };
  const sign = deps.sign ?? signHere;
  // One message for the HMAC and the receipt.
  const message = signingMessage(signed);
  const [receiptSignature, tokenSignature] = await Promise.all([
    sign(null, Buffer.from(message, 'utf8'), receiptKey.privateKey),
    deps.tsa.signWith(proofTokenRequest(signed, 'seconds'), sign),
  ]);
  return {
    id,
    created_at: createdAt,
    content_hash: request.contentHash,
    label: body.label,
    label_folded: body.label.toLowerCase(),
    metadata_hash: request.metadataHash,
    metadata_keys: JSON.stringify(request.metadataKeys),
    signature: hmacOfMessage(key.keyObject, message),
    receipt: encodeReceipt(receiptSignature),
    receipt_key_id: receiptKey.keyId,
    tst_signature: tokenSignature.toString('base64'),
    tst_key_id: deps.tsa.keyId,
    tst_format: 'seconds',
    key_id: key.keyId,
    idempotency_scope: scope,
    idempotency_key: body.idempotencyKey,
    request_fingerprint: request.fingerprint,
    account_id: principal.kind === 'account' ? principal.accountId : null,
    created_via: paidVia(principal),
    payment_network: null,
    payment_payer: null,
    payment_transaction: null,
    payment_amount: null,
  };
}

/** Records on a signed proof the payment that settled for it (before it is committed). */
export function recordPayment(row: NewProofRow, payment: PaymentRecord): void {
  row.payment_network = payment.network;
  row.payment_payer = payment.payer;
  row.payment_transaction = payment.transaction;
  row.payment_amount = payment.amount;
}
