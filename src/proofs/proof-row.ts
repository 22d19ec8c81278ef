import type { SignedProofFields } from '../core/proof-signature.ts';
import type { TokenTimeFormat } from '../tsa/tsa.ts';
import type { Proof } from './proof-schemas.ts';
import type { NewProofRow, ProofRow } from './proofs-store.ts';

/**
 * The fields a proof signs, from its stored row: its signing message, which its signatures and its
 * transparency-log leaf are over, is made of these (docs/verification.md). The timestamp is the ISO 8601
 * form of `created_at` (milliseconds, UTC).
 */
export function signedFields(
  row: Pick<ProofRow, 'id' | 'created_at' | 'content_hash' | 'metadata_hash' | 'label'>,
): SignedProofFields {
  return {
    id: row.id,
    timestamp: new Date(Number(row.created_at)).toISOString(),
    contentHash: row.content_hash,
    metadataHash: row.metadata_hash,
    label: row.label,
  };
}

/**
 * What the store keeps of a proof's RFC 3161 token: the TSA's signature (base64 DER) and how the token
 * writes its genTime; the rest of the token follows from the proof (tsa/tsa.ts, `proofTokenRequest`).
 */
export interface StoredToken {
  signature: string;
  format: TokenTimeFormat;
}

/** The stored token of a row; null for a proof made before tokens existed. */
export function storedToken(row: {
  tst_signature?: string | null;
  tst_format: ProofRow['tst_format'];
}): StoredToken | null {
  const signature = row.tst_signature ?? null;
  return signature === null ? null : { signature, format: row.tst_format };
}

/** The public proof document of a stored row; `verified` is the outcome of its signature check. */
export function proofDocument(row: ProofRow, verified: boolean, logOrigin: string): Proof {
  return {
    ...signedFields(row),
    verified,
    metadataKeys: JSON.parse(row.metadata_keys) as string[],
    signature: row.signature,
    keyId: row.key_id,
    accountId: row.account_id,
    payment:
      row.payment_transaction === null
        ? null
        : {
            network: row.payment_network ?? '',
            payer: row.payment_payer ?? '',
            transaction: row.payment_transaction,
            amount: row.payment_amount ?? '',
          },
    receipt:
      row.receipt === null || row.receipt_key_id === null
        ? null
        : { keyId: row.receipt_key_id, signature: row.receipt },
    timestampToken: row.tst_signature ? `/api/proofs/${row.id}/timestamp.tsr` : null,
    log:
      row.leaf_index === null || row.leaf_index === undefined
        ? null
        : { origin: logOrigin, leafIndex: Number(row.leaf_index) },
  };
}

/** Shared answers must not be changed by whoever reads them. */
export function deepFreeze<T extends object>(value: T): T {
  for (const item of Object.values(value)) {
    if (typeof item === 'object' && item !== null && !Object.isFrozen(item)) deepFreeze(item as object);
  }
  return Object.freeze(value);
}

export function rowFromInsert(row: NewProofRow): ProofRow {
  return { ...row, seq: 0, leaf_index: null } as ProofRow;
}
