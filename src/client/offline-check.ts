/** One check of an offline verification, as `verifyProofFile` and the witness quorum report it. */
export interface OfflineCheck {
  name: string;
  status: 'valid' | 'invalid' | 'unavailable' | 'unchecked';
  message: string;
}
