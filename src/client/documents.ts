/** The documents of the hashproof HTTP API as the client reads and sends them (docs/api.md). */

export interface Proof {
  id: string;
  verified: boolean;
  timestamp: string;
  contentHash: string;
  label: string;
  metadataHash: string;
  metadataKeys: string[];
  signature: string;
  keyId: string;
  accountId: string | null;
  payment: { network: string; payer: string; transaction: string; amount: string } | null;
  receipt: { keyId: string; signature: string } | null;
  /** Path of the RFC 3161 token (absent or null on proofs made before tokens existed). */
  timestampToken?: string | null;
  /** The proof's place in the transparency log, once integrated. */
  log?: { origin: string; leafIndex: number } | null;
}

export interface NotarizeInput {
  contentHash: string;
  label: string;
  metadata?: Record<string, unknown>;
  idempotencyKey: string;
}

export interface NotarizeResult {
  ok: boolean;
  mode: 'demo' | 'x402';
  idempotentReplay: boolean;
  proof: Proof;
  links: { proof: string; verify: string };
}

/** One item of a batch's answer: the proof (its RFC 3161 token inline) or the error of that item. */
export type BatchItem =
  | {
      ok: true;
      idempotentReplay: boolean;
      proof: Proof;
      links: NotarizeResult['links'];
      /** The proof's RFC 3161 token, base64 DER, as a proof file holds it (null: none was made). */
      evidence?: { timestampToken: string | null };
    }
  | { ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

export interface BatchResult {
  ok: boolean;
  mode: 'demo' | 'x402';
  items: BatchItem[];
}

export interface ProofPage {
  ok: boolean;
  proofs: Proof[];
  limit: number;
  nextCursor: string | null;
}

export interface SearchParams {
  q?: string;
  contentHash?: string;
  metadataHash?: string;
  accountId?: string;
  idempotencyKey?: string;
  limit?: number;
  cursor?: string;
}
