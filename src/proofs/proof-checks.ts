import { BoundedMap } from '../core/bounded-map.ts';
import { hmacVerify } from '../core/proof-signature.ts';
import type { Keyring } from '../keys/keyring.ts';
import type { LogService } from '../log/log-service.ts';
import { proofTokenRequest, type Tsa } from '../tsa/tsa.ts';
import {
  checkSignature,
  verifyProof,
  type Memo,
  type Trust,
  type VerifiableProof,
  type VerificationReport,
} from '../verify/proof-verifier.ts';
import type { TokenParts } from '../verify/timestamp-token.ts';
import type { StoredToken } from './proof-row.ts';
import type { Proof } from './proof-schemas.ts';

/** Check results kept (oldest dropped first): about 4 MB at most. */
const CHECK_CACHE_SIZE = 10_000;

interface ProofChecksDeps {
  keyring: Keyring;
  tsa: Tsa;
  log: Pick<LogService, 'inclusion' | 'verifierKey'>;
}

/**
 * The service's side of verification: it gathers the evidence of a stored proof and the keys it trusts,
 * and the one verifier (verify/proof-verifier.ts) decides, as it does for the command line and the
 * client library.
 */
export class ProofChecks {
  readonly #deps: ProofChecksDeps;
  /**
   * Results of checks, keyed by every byte that went into them (key ids, signatures, signed fields,
   * token, checkpoint). A check is a pure function of those bytes and keys never change, so a hit is the
   * answer recomputing would give; any change to a stored proof changes the key and is checked anew.
   */
  readonly #results = new BoundedMap<string, unknown>(CHECK_CACHE_SIZE);
  readonly #memo: Memo = (key, compute) => {
    if (this.#results.has(key)) return this.#results.get(key) as ReturnType<typeof compute>;
    const result = compute();
    this.#results.set(key, result);
    return result;
  };
  readonly #hmac: NonNullable<Trust['hmac']>;

  constructor(deps: ProofChecksDeps) {
    this.#deps = deps;
    this.#hmac = (fields, signature, keyId) => {
      const key = deps.keyring.find(keyId);
      return key === undefined ? undefined : hmacVerify(key.keyObject, fields, signature);
    };
  }

  /** Does the proof's HMAC signature verify under the service's key? (`verified` of a proof document) */
  isSignatureValid(proof: VerifiableProof): boolean {
    return checkSignature(proof, this.#hmac, this.#memo).status === 'valid';
  }

  /** The parts of a stored proof's token, rebuilt once from the stored fields it is made of. */
  #tokenParts(proof: Proof, { signature, format }: StoredToken): TokenParts {
    const key = ['p', proof.id, proof.contentHash, proof.timestamp, format, signature].join('\0');
    return this.#memo(key, () =>
      this.#deps.tsa.tokenParts(proofTokenRequest(proof, format), Buffer.from(signature, 'base64')),
    );
  }

  /** Checks a stored proof with the evidence the store holds now (never from memory). */
  async report(proof: Proof, token: StoredToken | null): Promise<VerificationReport> {
    const { keyring, tsa, log } = this.#deps;
    // A receipt key this instance has not seen (another one made it) is read from the key directory.
    if (proof.receipt !== null) keyring.findReceiptKey(proof.receipt.keyId);
    const inclusion =
      proof.log === null || proof.log === undefined
        ? null
        : await log.inclusion(proof.log.leafIndex, undefined, { fromStore: true });
    return verifyProof(
      proof,
      {
        timestampToken: token === null ? null : this.#tokenParts(proof, token),
        inclusion,
      },
      {
        receiptKeys: keyring.receiptKeys(),
        tsa: { certificate: tsa.certificate, root: tsa.root },
        logVerifierKey: log.verifierKey,
        hmac: this.#hmac,
      },
      this.#memo,
    );
  }
}
