/**
 * The witness (`hashproof witness`, docs/witness.md): a C2SP tlog-witness that cosigns the checkpoints
 * of the logs it is given, each only if consistent with the latest one it cosigned. Its key
 * (witness-key.ts), its record (witness-state.ts) and its HTTP answers (witness-server.ts,
 * add-checkpoint.ts). It shares nothing with the service but core/ and the key file checks.
 */
export { witnessKey } from './witness-key.ts';
export { witnessServer } from './witness-server.ts';
export { WitnessState } from './witness-state.ts';
