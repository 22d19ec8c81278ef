/**
 * The proof baseline of the benchmark: the irreducible work of one new proof in a bare Fastify route.
 * It parses and validates the same notarize body (the same TypeBox schema and validator compiler), derives
 * the same hashes, signs the same fields the same way (`signNewProof`: HMAC, Ed25519 receipt and the
 * ECDSA P-256 signature of the RFC 3161 token, on the same signing thread) and inserts the row into the
 * same `proofs` table of a SQLite file opened by `openDatabase` (the service's pragmas, its flush of
 * every commit to disk, its checkpoints off the request thread), through the same group commit.
 *
 * What it leaves out is what the service does beyond that: no idempotency look-up before signing, no
 * label index, per-day counts or event outbox in the transaction, no transparency log, no rate limit,
 * client turns, security headers, access log or large response schema; it answers the proof's id, time
 * and receipt. Started by `npm run bench` with `DATABASE_FILE`, `SIGNING_KEYS_DIR` and `PORT`.
 */
/* eslint-disable no-restricted-imports -- the baseline must do the service's own work at the same cost,
   so it imports the very pieces of the write path that scripts/ otherwise reach only through public files. */
import Fastify from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { createIdGenerator } from '../../src/core/ids.ts';
import { GroupCommitter } from '../../src/db/group-commit.ts';
import { openDatabase } from '../../src/db/index.ts';
import { createValidatorCompiler } from '../../src/http/validation.ts';
import { Keyring } from '../../src/keys/keyring.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { SigningThread } from '../../src/platform/signing-thread.ts';
import { describeRequest, idempotencyScope, type Principal } from '../../src/proofs/notarize-request.ts';
import { NotarizeBody } from '../../src/proofs/proof-schemas.ts';
import { signNewProof } from '../../src/proofs/proof-signer.ts';
import type { NewProofRow } from '../../src/proofs/proofs-store.ts';
import { Tsa } from '../../src/tsa/tsa.ts';

const file = process.env.DATABASE_FILE;
const keysDir = process.env.SIGNING_KEYS_DIR;
if (file === undefined || keysDir === undefined)
  throw new Error('DATABASE_FILE and SIGNING_KEYS_DIR are required');

const database = await openDatabase({ engine: 'sqlite', path: file });
const { db } = database;
const signing = new SigningThread();
const deps = {
  keyring: Keyring.open(keysDir),
  tsa: await Tsa.open(keysDir, 'localhost'),
  ids: createIdGenerator(),
  clock: systemClock,
  sign: signing.sign,
};

/** One transaction per batch of rows, one row per proof: what any durable store of proofs must do. */
const writer = new GroupCommitter<NewProofRow, void>(async (rows) => {
  await db.transaction().execute((trx) => trx.insertInto('proofs').values(rows).execute());
  return rows.map(() => undefined);
});

const principal: Principal = { kind: 'public' };
const scope = idempotencyScope(principal);

const app = Fastify({ logger: false, bodyLimit: 128 * 1024 }).withTypeProvider<TypeBoxTypeProvider>();
app.setValidatorCompiler(createValidatorCompiler());
app.post('/api/proof/notarize', { schema: { body: NotarizeBody } }, async (request) => {
  const body = request.body;
  const row = await signNewProof(deps, body, principal, describeRequest(body), scope);
  await writer.submit(row);
  return { id: row.id, timestamp: new Date(row.created_at).toISOString(), receipt: row.receipt };
});

app.get('/health', async () => ({ ok: true }));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => {
  void (async () => {
    await app.close();
    await writer.idle();
    await signing.close();
    await database.close();
    process.exit(0);
  })();
});
