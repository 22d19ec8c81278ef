import type { SignedProofFields } from '../core/proof-signature.ts';
import type { ProofRow } from './proofs-store.ts';

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
