import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';
import { keyManifest, KeyManifest } from './key-manifest.ts';
import { KEYS_MANIFEST_PATH } from './keyring.ts';

/** GET /.well-known/hashproof-keys.json: every public key, so receipts can be checked offline, forever. */
export async function keysRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    KEYS_MANIFEST_PATH,
    {
      schema: {
        summary: 'The public keys that sign proof receipts, with their validity windows',
        tags: ['verification'],
        response: { 200: { description: 'The key manifest', ...KeyManifest } },
      },
    },
    async (_request, reply) => {
      void reply.header('Cache-Control', 'public, max-age=300');
      return keyManifest({
        service: ctx.config.publicBaseUrl,
        receiptKeys: ctx.keyring.receiptKeys(),
        logKey: ctx.keyring.logKey,
        logVerifierKey: ctx.log.verifierKey,
        tsa: ctx.tsa,
      });
    },
  );
}
