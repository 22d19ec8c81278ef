import type { Selectable } from 'kysely';
import type { Db } from '../db/index.ts';
import type { PaymentAuthorization } from '../core/payment-authorization.ts';
import type { PaymentAuthorizationsTable } from '../db/schema.ts';

export type AuthorizationRow = Selectable<PaymentAuthorizationsTable>;

/**
 * A settling claim whose authorization expired this long ago frees its idempotency key: past
 * `validBefore` the token contract refuses the transfer, so that payment can no longer land.
 */
const EXPIRED_CLAIM_GRACE_MS = 60_000;

type ClaimResult =
  | { kind: 'claimed' }
  /** This authorization was taken before (by this request's key or by another). */
  | { kind: 'taken'; row: AuthorizationRow }
  /** Another authorization is settling for the same idempotency key. */
  | { kind: 'key_busy' };

const byAuthorization = (db: Db, authorization: PaymentAuthorization) =>
  db
    .selectFrom('payment_authorizations')
    .selectAll()
    .where('network', '=', authorization.network)
    .where('payer', '=', authorization.payer)
    .where('nonce', '=', authorization.nonce);

export async function findAuthorization(
  db: Db,
  authorization: PaymentAuthorization,
): Promise<AuthorizationRow | undefined> {
  return byAuthorization(db, authorization).executeTakeFirst();
}

/**
 * Takes the authorization for the proof of (scope, key), before it is settled. The database decides
 * between instances: the primary key refuses a second use of the authorization, the partial unique
 * index a second payment settling for the same key. A claim of the key whose authorization expired is
 * first marked `expired`, which frees the key.
 */
export async function claimAuthorization(
  db: Db,
  authorization: PaymentAuthorization,
  scope: string,
  key: string,
  nowMs: number,
): Promise<ClaimResult> {
  await db
    .updateTable('payment_authorizations')
    .set({ state: 'expired' })
    .where('idempotency_scope', '=', scope)
    .where('idempotency_key', '=', key)
    .where('state', '=', 'settling')
    .where('valid_before', '<', nowMs - EXPIRED_CLAIM_GRACE_MS)
    .execute();
  const inserted = await db
    .insertInto('payment_authorizations')
    .values({
      network: authorization.network,
      payer: authorization.payer,
      nonce: authorization.nonce,
      payload_digest: authorization.payloadDigest,
      idempotency_scope: scope,
      idempotency_key: key,
      state: 'settling',
      valid_before: authorization.validBeforeMs,
      proof_id: null,
      created_at: nowMs,
    })
    .onConflict((oc) => oc.doNothing())
    .returning('nonce')
    .executeTakeFirst();
  if (inserted !== undefined) return { kind: 'claimed' };
  const row = await findAuthorization(db, authorization);
  return row === undefined ? { kind: 'key_busy' } : { kind: 'taken', row };
}

/** Gives a claim up: its payment was refused, so nothing moved and the authorization may be used again. */
export async function releaseAuthorization(db: Db, authorization: PaymentAuthorization): Promise<void> {
  await db
    .deleteFrom('payment_authorizations')
    .where('network', '=', authorization.network)
    .where('payer', '=', authorization.payer)
    .where('nonce', '=', authorization.nonce)
    .where('state', '=', 'settling')
    .execute();
}

/** Records the proof the authorization paid for; runs in the transaction that stores the proof. */
export async function markSettled(
  trx: Db,
  authorization: PaymentAuthorization,
  proofId: string,
): Promise<void> {
  await trx
    .updateTable('payment_authorizations')
    .set({ state: 'settled', proof_id: proofId })
    .where('network', '=', authorization.network)
    .where('payer', '=', authorization.payer)
    .where('nonce', '=', authorization.nonce)
    .execute();
}
