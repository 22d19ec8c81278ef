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
  /** `ed25519:<base64>` over the signing message; null for proofs made before receipts existed. */
  receipt: string | null;
  receipt_key_id: string | null;
  /** The proof's index in the transparency log; null until the sequencer integrated it. */
  leaf_index: number | null;
  /** The TSA's ECDSA signature of the proof's RFC 3161 token (base64 DER); the rest is rebuilt. */
  tst_signature: string | null;
  tst_key_id: string | null;
  /**
   * How the token writes its genTime: `seconds` (the timestamp rounded up to the whole second) or
   * `millis` (the timestamp to the millisecond, proofs stored before migration 0011). See tsa/tsa.ts.
   */
  tst_format: 'seconds' | 'millis';
}

/** Every complete subtree of the log's Merkle tree: level 0 holds leaf hashes (base64). */
interface LogNodesTable {
  level: number;
  idx: number;
  hash: string;
}

interface LogCheckpointsTable {
  tree_size: number;
  root_hash: string;
  /** The C2SP signed note, verbatim. */
  checkpoint: string;
  created_at: number;
}

/** One row (id 1): the size of the latest signed tree, advanced by compare-and-swap. */
interface LogHeadTable {
  id: number;
  tree_size: number;
  /** The log's name, fixed when the log is first opened. */
  origin: string | null;
}

export interface AccountsTable {
  id: string;
  name: string;
  owner_label: string;
  status: string;
  created_at: number;
  updated_at: number;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  key_prefix: string;
  /** Lowercase hex SHA-256 of the raw key; the raw key itself is never stored. */
  key_hash: string;
  /** JSON array of scope names. */
  scopes: string;
  status: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface WebhooksTable {
  id: string;
  account_id: string;
  name: string;
  url: string;
  /** JSON array of event types. */
  events: string;
  /** The signing secret (`whsec_…`): needed to sign every delivery, returned only at creation. */
  secret: string;
  status: string;
  created_at: number;
  updated_at: number;
}

export interface WebhookEventsTable {
  id: string;
  type: string;
  account_id: string;
  /** The exact JSON body every delivery of this event sends. */
  payload: string;
  created_at: number;
}

export interface WebhookTasksTable {
  id: string;
  event_id: string;
  webhook_id: string;
  /** pending, succeeded or failed. */
  status: string;
  attempts: number;
  next_attempt_at: number;
  lease_owner: string | null;
  lease_until: number | null;
  created_at: number;
}

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  /** scheduled or test. */
  trigger: string;
  url: string;
  /** succeeded or failed. */
  status: string;
  response_status: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
  created_at: number;
  next_attempt_at: number | null;
}

/** Proofs made per UTC day and way of creation (migration 0008), kept in step by `insertProofs`. */
interface ProofCountsTable {
  /** Days since the epoch (UTC). */
  day: number;
  created_via: string;
  count: number;
}

/** x402 payment authorizations taken (migration 0009); one buys at most one proof. */
export interface PaymentAuthorizationsTable {
  network: string;
  /** Lowercase address. */
  payer: string;
  /** Lowercase, as signed (EIP-3009 bytes32 hex, or the Permit2 nonce in decimal). */
  nonce: string;
  /** SHA-256 of the canonical JSON of the signed payload (authorization and signature). */
  payload_digest: string;
  idempotency_scope: string;
  idempotency_key: string;
  /** settling, settled or expired. */
  state: string;
  /** Epoch milliseconds after which the authorization can no longer be settled. */
  valid_before: number;
  proof_id: string | null;
  created_at: number;
}

interface AnchorsTable {
  tree_size: number;
  root_hash: string;
  checkpoint: string;
  created_at: number;
  /** Every calendar's timestamp of the root merged into one, serialized, base64 (migration 0013). */
  ots: string | null;
}

interface AnchorTokensTable {
  tree_size: number;
  url: string;
  /** The token's genTime, ms since the epoch. */
  gen_time: number;
  /** The DER TimeStampToken, base64. */
  token: string;
}

interface AnchorCalendarsTable {
  tree_size: number;
  calendar: string;
  /** The calendar's answer to the root hash (a serialized OpenTimestamps timestamp), base64. */
  reply: string;
  /** bitcoin: its block header checked; claimed: the calendar says so, no header checked. */
  status: 'pending' | 'claimed' | 'bitcoin';
  bitcoin_height: number | null;
  /** The calendar's upgrade of the pending commitment, base64, once Bitcoin attests it. */
  upgrade: string | null;
  checks: Generated<number>;
  /** When to ask for the upgrade next; null once confirmed or given up. */
  next_check_at: number | null;
  submitted_at: number;
}

interface AnchorEndpointsTable {
  url: string;
  kind: 'rfc3161' | 'opentimestamps';
  failures: Generated<number>;
  last_success_at: number | null;
  last_failure_at: number | null;
  last_error: string | null;
  retry_at: number | null;
}

interface AnchorLeaseTable {
  id: number;
  holder: string | null;
  expires_at: number;
}

/** A witness's cosignature of one checkpoint, checked against its key (migration 0014). */
interface WitnessCosignaturesTable {
  tree_size: number;
  /** The witness's verifier key (`<name>+<hex id>+<base64>`). */
  witness: string;
  /** The cosigned checkpoint's root, base64. */
  root_hash: string;
  /** The signature line, without its final newline. */
  line: string;
  /** The cosignature's own timestamp, POSIX seconds. */
  cosigned_at: number;
  created_at: number;
}

interface WitnessStatusTable {
  witness: string;
  /** The tree size the witness last cosigned, as it said (200, or a 409's size); null before it said. */
  cosigned_size: number | null;
  failures: Generated<number>;
  last_success_at: number | null;
  last_failure_at: number | null;
  last_error: string | null;
}

interface WitnessLeaseTable {
  id: number;
  holder: string | null;
  expires_at: number;
}

export interface Database {
  witness_cosignatures: WitnessCosignaturesTable;
  witness_status: WitnessStatusTable;
  witness_lease: WitnessLeaseTable;
  anchors: AnchorsTable;
  anchor_tokens: AnchorTokensTable;
  anchor_calendars: AnchorCalendarsTable;
  anchor_endpoints: AnchorEndpointsTable;
  anchor_lease: AnchorLeaseTable;
  proofs: ProofsTable;
  proof_counts: ProofCountsTable;
  payment_authorizations: PaymentAuthorizationsTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  webhooks: WebhooksTable;
  webhook_events: WebhookEventsTable;
  webhook_tasks: WebhookTasksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  log_nodes: LogNodesTable;
  log_checkpoints: LogCheckpointsTable;
  log_head: LogHeadTable;
}
