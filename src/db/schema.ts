import type { Generated } from 'kysely';

/** Row types of every table, in snake_case as in SQL. Times are integer epoch milliseconds. */
export interface ProofsTable {
  /** Insertion order on both engines; reads order by it, ids are only looked up. */
  seq: Generated<number>;
  id: string;
  created_at: number;
  content_hash: string;
  label: string;
  /** The label lowercased (Unicode), so label search is case-insensitive the same way on every engine. */
  label_folded: string;
  metadata_hash: string;
  /** JSON array of the sorted top-level metadata key names. */
  metadata_keys: string;
  signature: string;
  key_id: string;
  idempotency_scope: string;
  idempotency_key: string;
  /** sha256 of the JCS of { contentHash, label, metadataHash }: tells a replay from a reuse. */
  request_fingerprint: string;
  account_id: string | null;
  /** How the proof was paid for: demo, x402 or api_key. */
  created_via: string;
  payment_network: string | null;
  payment_payer: string | null;
  payment_transaction: string | null;
  payment_amount: string | null;
}

export interface Database {
  proofs: ProofsTable;
}
