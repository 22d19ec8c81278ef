/**
 * Signing on the calling thread (core/signing.ts), under the name the proof service imports it by. The
 * signing thread itself is platform code: platform/signing-thread.ts.
 */
export { signHere, type SignFn } from './signing.ts';
