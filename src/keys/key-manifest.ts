import type { KeyObject, X509Certificate } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { LogKey, ReceiptKey } from './key-files.ts';

const PublicKey = Type.Object({
  keyId: Type.String(),
  algorithm: Type.Union([Type.Literal('Ed25519'), Type.Literal('ECDSA-P256')]),
  use: Type.Union([Type.Literal('receipt'), Type.Literal('log'), Type.Literal('tsa')], {
    description:
      '`receipt`: signs proof receipts; `log`: signs the transparency log checkpoints; `tsa`: signs RFC 3161 ' +
      'tokens (its certificate chain is at /api/tsa/certs.pem).',
  }),
  publicKey: Type.String({ description: 'The public key, base64 of its DER SubjectPublicKeyInfo.' }),
  publicKeyPem: Type.String(),
  validFrom: Type.String({ format: 'date-time' }),
  validUntil: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description:
      'When a newer key took over (or will: a rotation may name a time to come); null for the newest ' +
      'key. Old keys stay listed.',
  }),
  verifierKey: Type.Optional(
    Type.String({ description: 'For the log key: the C2SP signed-note verifier key (`origin+keyid+key`).' }),
  ),
});

export const KeyManifest = Type.Object({ service: Type.String(), keys: Type.Array(PublicKey) });

/** What the manifest is made of: the same for the service's route and for `hashproof keys export-public`. */
export interface ManifestSources {
  /** The service's public base URL. */
  service: string;
  receiptKeys: ReceiptKey[];
  logKey: LogKey;
  /** The log's C2SP verifier key (it names the log's origin). */
  logVerifierKey: string;
  tsa: { keyId: string; publicKey: KeyObject; certificate: X509Certificate };
}

/** The public key manifest (/.well-known/hashproof-keys.json): every public key, oldest first. */
export function keyManifest(sources: ManifestSources): Static<typeof KeyManifest> {
  const { logKey, tsa } = sources;
  return {
    service: sources.service,
    keys: [
      ...sources.receiptKeys.map((key) => ({
        keyId: key.keyId,
        algorithm: 'Ed25519' as const,
        use: 'receipt' as const,
        ...publicKeyFields(key.publicKey),
        validFrom: key.validFrom,
        validUntil: key.validUntil,
      })),
      {
        keyId: logKey.keyId,
        algorithm: 'Ed25519' as const,
        use: 'log' as const,
        ...publicKeyFields(logKey.publicKey),
        validFrom: logKey.createdAt,
        validUntil: null,
        verifierKey: sources.logVerifierKey,
      },
      {
        keyId: tsa.keyId,
        algorithm: 'ECDSA-P256' as const,
        use: 'tsa' as const,
        ...publicKeyFields(tsa.publicKey),
        validFrom: new Date(tsa.certificate.validFrom).toISOString(),
        validUntil: null,
      },
    ],
  };
}

/** A public key as the manifest gives it: base64 DER SubjectPublicKeyInfo, and the same as PEM. */
function publicKeyFields(key: KeyObject): { publicKey: string; publicKeyPem: string } {
  return {
    publicKey: key.export({ format: 'der', type: 'spki' }).toString('base64'),
    publicKeyPem: key.export({ format: 'pem', type: 'spki' }).toString(),
  };
}
