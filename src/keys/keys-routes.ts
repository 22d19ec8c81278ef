import type { FastifyInstance } from 'fastify';
import type { KeyObject } from 'node:crypto';
import { Type } from 'typebox';
import type { AppContext } from '../context.ts';

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
    description: 'When a newer key took over; null for the key that signs now. Old keys stay listed.',
  }),
  verifierKey: Type.Optional(
    Type.String({ description: 'For the log key: the C2SP signed-note verifier key (`origin+keyid+key`).' }),
  ),
});

const KeyManifest = Type.Object({ service: Type.String(), keys: Type.Array(PublicKey) });

/** GET /.well-known/hashproof-keys.json: every public key, so receipts can be checked offline, forever. */
export async function keysRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/.well-known/hashproof-keys.json',
    {
      schema: {
        summary: 'The public keys that sign proof receipts, with their validity windows',
        tags: ['verification'],
        response: { 200: { description: 'The key manifest', ...KeyManifest } },
      },
    },
    async (_request, reply) => {
      void reply.header('Cache-Control', 'public, max-age=300');
      const logKey = ctx.keyring.logKey;
      return {
        service: ctx.config.publicBaseUrl,
        keys: [
          ...ctx.keyring.receiptKeys().map((key) => ({
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
            verifierKey: ctx.log.verifierKey,
          },
          {
            keyId: ctx.tsa.keyId,
            algorithm: 'ECDSA-P256' as const,
            use: 'tsa' as const,
            ...publicKeyFields(ctx.tsa.publicKey),
            validFrom: new Date(ctx.tsa.certificate.validFrom).toISOString(),
            validUntil: null,
          },
        ],
      };
    },
  );
}

/** A public key as the manifest gives it: base64 DER SubjectPublicKeyInfo, and the same as PEM. */
function publicKeyFields(key: KeyObject): { publicKey: string; publicKeyPem: string } {
  return {
    publicKey: key.export({ format: 'der', type: 'spki' }).toString('base64'),
    publicKeyPem: key.export({ format: 'pem', type: 'spki' }).toString(),
  };
}
