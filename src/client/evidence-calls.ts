import type { ProofAnchors } from '../verify/anchor-checks.ts';
import { ANSWER_CAPS, HashproofError, isObject } from './answers.ts';
import { encodeId as id, type Call } from './call.ts';
import type { Evidence, ManifestKey } from './offline.ts';

/**
 * The client's reads of one proof's evidence: its RFC 3161 token and the TSA chain, its offline evidence
 * as a proof file holds it, and its anchors.
 */
export function proofEvidenceCalls(call: Call, keys: () => Promise<{ keys: ManifestKey[] }>) {
  /** The answer of a GET, or undefined when the service answers one of the `absent` codes. */
  const unless = async <T>(absent: (error: HashproofError) => boolean, request: Promise<T>) => {
    try {
      return await request;
    } catch (error) {
      if (error instanceof HashproofError && absent(error)) return undefined;
      throw error;
    }
  };
  /** A proof's RFC 3161 token, a DER TimeStampResp (`/api/proofs/{id}/timestamp.tsr`). */
  const timestampToken = (proofId: string) =>
    call<Buffer>('GET', `/api/proofs/${id(proofId)}/timestamp.tsr`, {
      as: 'bytes',
      maxBytes: ANSWER_CAPS.timestampToken,
    });
  /** The TSA's certificate followed by its root, PEM (`/api/tsa/certs.pem`). */
  const tsaCertificates = () => call<string>('GET', '/api/tsa/certs.pem', { as: 'text' });
  return {
    timestampToken,
    tsaCertificates,
    /**
     * The offline evidence of a proof: its RFC 3161 token and TSA chain, and, once the proof is in the
     * log (waiting up to `waitMs` for it), its tlog-proof and the log's verifier key.
     */
    async evidence(proofId: string, waitMs = 3_000): Promise<Evidence> {
      const evidence: Evidence = {};
      const path = `/api/proofs/${id(proofId)}`;
      const token = await unless((error) => error.status === 404, timestampToken(proofId));
      if (token !== undefined) {
        evidence.timestampToken = token.toString('base64');
        evidence.tsaCertificates = await tsaCertificates();
      }
      const until = Date.now() + waitMs;
      for (let attempt = 1; ; attempt++) {
        let isPending = false;
        const tlogProof = await unless(
          (error) => ((isPending = error.status === 409), isPending || error.status === 404),
          call<string>('GET', `${path}/tlog-proof`, { as: 'text', maxBytes: ANSWER_CAPS.tlogProof }),
        );
        if (tlogProof !== undefined) {
          evidence.tlogProof = tlogProof;
          const logKey = (await keys()).keys.find((k) => k.use === 'log')?.verifierKey;
          if (logKey !== undefined) evidence.logVerifierKey = logKey;
          return evidence;
        }
        if (!isPending || Date.now() > until) return evidence;
        // Not integrated yet: ask again, less and less often (each ask counts against a rate limit).
        await sleep(Math.min(100 * attempt, 500));
      }
    },
    /**
     * The anchors of a proof (`/api/proofs/{id}/anchors`) with its OpenTimestamps file (`ots`, base64)
     * when a calendar has it; undefined while no anchored checkpoint holds the proof.
     */
    async anchors(proofId: string): Promise<ProofAnchors | undefined> {
      try {
        const anchors = await call<ProofAnchors>('GET', `/api/proofs/${id(proofId)}/anchors`, {
          isValid: (answer) => isObject(answer) && Array.isArray(answer.opentimestamps),
        });
        if (anchors.opentimestamps.length === 0) return anchors;
        const ots = await call<Buffer>('GET', `/api/proofs/${id(proofId)}/proof.ots`, { as: 'bytes' });
        return { ...anchors, ots: ots.toString('base64') };
      } catch (error) {
        if (error instanceof HashproofError && error.code === 'not_yet_anchored') return undefined;
        throw error;
      }
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
