/**
 * Writes test/vectors/hashproof-proof/vector.json: one proof made by the service, with every piece of
 * evidence a verifier reads (key manifest, RFC 3161 token and TSA chain, tlog-proof and log key) and the
 * HMAC secret of the throwaway key that signed it. The verifier's known-answer tests read it, so a proof
 * made by this version must keep verifying in every later one. Run: node scripts/proof-vector.ts [file]
 * (a file name in that folder; vector.json by default).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createClient } from '../src/client/client.ts';
import { startServer } from '../test/helper.ts';

const server = await startServer();
try {
  const client = createClient({ baseUrl: server.baseUrl });
  const { proof } = await client.notarize({
    contentHash: 'sha256:' + '5a'.repeat(32),
    label: 'known-answer vector',
    metadata: { purpose: 'verifier known-answer tests' },
    idempotencyKey: 'known-answer-vector',
  });
  const evidence = await client.evidence(proof.id, 10_000);
  if (evidence.tlogProof === undefined) throw new Error('the proof did not reach the log');
  const { keys } = await client.keys();
  const hmacKey = server.ctx.keyring.find(proof.keyId);
  if (hmacKey === undefined) throw new Error('no HMAC key');
  const vector = {
    about: 'A proof made by hashproof with throwaway keys; see scripts/proof-vector.ts',
    proof,
    keys,
    evidence,
    hmacSecret: hmacKey.secret.toString('base64'),
  };
  const name = process.argv[2] ?? 'vector.json';
  const file = path.join(import.meta.dirname, '..', 'test', 'vectors', 'hashproof-proof', name);
  writeFileSync(file, JSON.stringify(vector, null, 2) + '\n');
  console.log(`wrote ${file}`);
} finally {
  await server.close();
  server.cleanup();
}
