import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { up as tokenFormatMigration } from '../db/migrations/0011-token-format.ts';
import { api, notarizeBody, sampleHash, startServer } from '../../test/helper.ts';
import { vectorsDir } from '../../test/vectors.ts';
import { parseTimestampToken } from '../verify/timestamp-token.ts';
import { proofTokenRequest } from './tsa.ts';
import { grantedResponse, tokenSigner } from './tsa-token.ts';

/**
 * Tokens made before whole-second genTimes (`millis`) keep their form: each proof records it (migration
 * 0011), and its token is rebuilt byte for byte from its stored signature in that form.
 */

/** A proof made before whole-second genTimes, with its token as the service then served it. */
const vector = JSON.parse(readFileSync(path.join(vectorsDir('hashproof-proof'), 'vector.json'), 'utf8'));

test('a token made before whole-second genTimes is rebuilt byte for byte from its signature, in its form', () => {
  const recorded = Buffer.from(vector.evidence.timestampToken, 'base64');
  const parts = parseTimestampToken(recorded);
  if (typeof parts === 'string') assert.fail(parts);
  const [tsaPem] = (vector.evidence.tsaCertificates as string).split(/(?<=-----END CERTIFICATE-----\n)/);
  const signer = tokenSigner(Buffer.from(new X509Certificate(tsaPem!).raw));
  assert.notEqual(Date.parse(vector.proof.timestamp) % 1000, 0, 'the two forms differ for this proof');
  const rebuilt = grantedResponse(proofTokenRequest(vector.proof, 'millis'), signer, parts.signature);
  assert.ok(rebuilt.equals(recorded));
  const asSeconds = grantedResponse(proofTokenRequest(vector.proof, 'seconds'), signer, parts.signature);
  assert.ok(!asSeconds.equals(recorded));
});

test('the migration marks the proofs stored before it as millis; their tokens keep verifying', async (t) => {
  const server = await startServer();
  t.after(async () => {
    await server.close();
    server.cleanup();
  });
  const { db, engine } = server.ctx.database;
  const notarize = async (n: number) =>
    (
      await api(server.baseUrl, '/api/proof/notarize', {
        body: notarizeBody({ contentHash: sampleHash(5000 + n), idempotencyKey: `format-${n}` }),
      })
    ).body.proof;
  const made = [await notarize(0), await notarize(1)];
  // The database as an earlier version left it: no column, each token signed over the milliseconds.
  await sql`alter table proofs drop column tst_format`.execute(db);
  for (const proof of made) {
    const signature = server.ctx.tsa.sign(proofTokenRequest(proof, 'millis')).toString('base64');
    await sql`update proofs set tst_signature = ${signature} where id = ${proof.id}`.execute(db);
  }
  await tokenFormatMigration(db as never, { engine });
  const formats = await db.selectFrom('proofs').select(['id', 'tst_format']).orderBy('seq').execute();
  assert.deepEqual(
    formats.map((row) => `${row.id} ${row.tst_format}`),
    made.map((proof) => `${proof.id as string} millis`),
  );

  const dir = server.dataDir;
  const chain = (await api(server.baseUrl, '/api/tsa/certs.pem')).text;
  writeFileSync(path.join(dir, 'root.pem'), chain.slice(chain.indexOf('-----END CERTIFICATE-----\n') + 26));
  for (const proof of made) {
    const res = await fetch(`${server.baseUrl}/api/proofs/${proof.id as string}/timestamp.tsr`);
    const token = Buffer.from(await res.arrayBuffer());
    const parts = parseTimestampToken(token);
    if (typeof parts === 'string') assert.fail(parts);
    assert.equal(parts.genTime.toISOString(), proof.timestamp);
    writeFileSync(path.join(dir, 'old.tsr'), token);
    const hex = (proof.contentHash as string).slice('sha256:'.length);
    const args = ['-digest', hex, '-in', path.join(dir, 'old.tsr'), '-CAfile', path.join(dir, 'root.pem')];
    const openssl = spawnSync('openssl', ['ts', '-verify', ...args], { encoding: 'utf8' });
    assert.equal(openssl.status, 0, openssl.stderr);
    const report = await api(server.baseUrl, `/api/verify/proofs/${proof.id as string}`);
    assert.equal(report.body.checks.timestamp.status, 'valid', report.body.checks.timestamp.message);
  }

  // Read in the other form, the same signature is over another token, which does not verify (unless the
  // timestamp is on a whole second, where both forms are one).
  await db.updateTable('proofs').set({ tst_format: 'seconds' }).where('id', '=', made[0].id).execute();
  const misread = await api(server.baseUrl, `/api/verify/proofs/${made[0].id as string}`);
  const isOnASecond = Date.parse(made[0].timestamp as string) % 1000 === 0;
  assert.equal(misread.body.checks.timestamp.status, isOnASecond ? 'valid' : 'invalid');

  // A proof written by an instance that does not know the column yet is marked with its form.
  await sql`insert into proofs (id, created_at, content_hash, label, label_folded, metadata_hash,
    metadata_keys, signature, key_id, idempotency_scope, idempotency_key, request_fingerprint, created_via)
    select 'proof_older', created_at, content_hash, label, label_folded, metadata_hash, metadata_keys,
    signature, key_id, idempotency_scope, 'format-older', request_fingerprint, created_via
    from proofs where id = ${made[1].id}`.execute(db);
  const older = await db
    .selectFrom('proofs')
    .select('tst_format')
    .where('id', '=', 'proof_older')
    .executeTakeFirstOrThrow();
  assert.equal(older.tst_format, 'millis');
});
