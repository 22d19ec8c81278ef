/** The path of the operation that creates proofs, as the service routes it and the client calls it. */
export const NOTARIZE_PATH = '/api/proof/notarize';

/** The path of the operation that creates up to 1,000 proofs in one request (docs/api.md, "Batches"). */
export const BATCH_PATH = '/api/proof/batch';
