import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { inclusionChecked, makeDataDir, startServer, testDatabaseUrl } from '../../test/helper.ts';
import { seed } from './seed.ts';

// Seeded proofs stand in for real ones in the read benchmarks, so they must be what the service writes:
// each check of the verification report holds for them, the RFC 3161 token included.
test('seeded proofs verify like proofs the service made', async () => {
  const dataDir = makeDataDir();
  const env = { DATABASE_URL: await testDatabaseUrl(dataDir), SIGNING_KEYS_DIR: path.join(dataDir, 'keys') };
  const ids = await seed({ ...process.env, ...env }, 30);
  assert.equal(ids.length, 30);
  const server = await startServer({ dataDir });
  try {
    for (const id of [ids[0], ids[29]]) {
      // The log takes the seeded proofs in within its first step.
      const report = await inclusionChecked(server.baseUrl, id!);
      assert.equal(report.status, 200);
      for (const check of ['signature', 'receipt', 'timestamp', 'inclusion'])
        assert.equal(
          report.body.checks[check].status,
          'valid',
          `${check}: ${report.body.checks[check].message}`,
        );
      assert.equal(report.body.verified, true);
      const token = await fetch(`${server.baseUrl}/api/proofs/${id}/timestamp.tsr`);
      assert.equal(token.status, 200);
    }
  } finally {
    await server.close();
    server.cleanup();
  }
});
