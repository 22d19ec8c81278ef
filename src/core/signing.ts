import { sign as signNow, type KeyObject } from 'node:crypto';

/** Signs `data` with a private key: `sha256` for ECDSA, null for Ed25519 (as `crypto.sign`). */
export type SignFn = (algorithm: 'sha256' | null, data: Uint8Array, key: KeyObject) => Promise<Buffer>;

/** Signs on the calling thread. */
export const signHere: SignFn = (algorithm, data, key) => Promise.resolve(signNow(algorithm, data, key));
