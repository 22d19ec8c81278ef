/** The path of the operation that creates proofs, as the service routes it and the client calls it. */
export const NOTARIZE_PATH = '/api/proof/notarize';
