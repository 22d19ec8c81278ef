import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { dropTestSchema, makeDataDir, sampleHash, testDatabaseUrl } from '../../test/helper.ts';
import { loadConfig } from '../config.ts';
import { openDatabase, type DatabaseHandle } from '../db/index.ts';
import { insertProofs, type NewProofRow } from './proofs-store.ts';

let dataDir: string;
let database: DatabaseHandle;

before(async () => {
  dataDir = makeDataDir();
  database = await openDatabase(loadConfig({ DATABASE_URL: await testDatabaseUrl(dataDir) }).database);
});

after(async () => {
  await database.close();
  await dropTestSchema(dataDir);
  rmSync(dataDir, { recursive: true, force: true });
});

let next = 0;
function row(key: string, overrides: Partial<NewProofRow> = {}): NewProofRow {
  const n = ++next;
  return {
    id: `proof_${String(n).padStart(26, '0')}`,
    created_at: 1_800_000_000_000 + n,
    content_hash: sampleHash(n),
    label: `Batch Row ${n}`,
    label_folded: `batch row ${n}`,
    metadata_hash: sampleHash(1_000 + n),
    metadata_keys: '["a","b"]',
    signature: `hmac-sha256:${n}`,
    key_id: 'hmac-test',
    idempotency_scope: 'public',
    idempotency_key: key,
    request_fingerprint: `fingerprint-${n}`,
    account_id: n % 2 === 0 ? `acct_${n}` : null,
    created_via: 'demo',
    payment_network: n % 3 === 0 ? 'eip155:8453' : null,
    payment_payer: n % 3 === 0 ? '0xabc' : null,
    payment_transaction: n % 3 === 0 ? '0xdef' : null,
    payment_amount: n % 3 === 0 ? '5000' : null,
    receipt: `ed25519:${n}`,
    receipt_key_id: 'ed25519-test',
    tst_signature: n % 2 === 0 ? `tst-${n}` : null,
    tst_key_id: n % 2 === 0 ? 'tsa-test' : null,
    tst_format: n % 4 === 0 ? 'millis' : 'seconds',
    ...overrides,
  };
}

const write = (rows: NewProofRow[]) =>
  database.db.transaction().execute((trx) => insertProofs(trx, database.engine, rows));

test('a batch stores every column as given, in order, and skips keys already taken', async () => {
  const first = [row('store-a'), row('store-b'), row('store-c')];
  assert.deepEqual(await write(first), new Set(first.map((r) => r.id)));

  // One key taken by an earlier batch, one taken twice within this batch: the first of the two wins.
  const second = [row('store-b'), row('store-d'), row('store-e'), row('store-d'), row('store-f')];
  const inserted = await write(second);
  assert.deepEqual(inserted, new Set([second[1]!.id, second[2]!.id, second[4]!.id]));

  const stored = await database.db
    .selectFrom('proofs')
    .selectAll()
    .where('idempotency_key', 'like', 'store-%')
    .orderBy('seq')
    .execute();
  const expected = [...first, second[1]!, second[2]!, second[4]!];
  assert.deepEqual(
    stored.map(({ seq: _seq, ...columns }) => columns),
    expected.map((r) => ({ ...r, leaf_index: null })),
  );
  const seqs = stored.map((r) => Number(r.seq));
  assert.deepEqual(
    seqs,
    [...seqs].sort((a, b) => a - b),
  );
});

test('a large batch goes in whole and in order, a key repeated within it or across its statements kept once', async () => {
  // 45 rows: one statement of 32, one of 8 and five of 1. Row 10 repeats row 5's key (the same
  // statement); row 40 repeats row 3's (a later statement); row 44 repeats row 36's.
  const keys = Array.from({ length: 45 }, (_, i) => `large-${i}`);
  keys[10] = keys[5]!;
  keys[40] = keys[3]!;
  keys[44] = keys[36]!;
  const rows = keys.map((key) => row(key));
  const kept = rows.filter((_, i) => i !== 10 && i !== 40 && i !== 44);
  assert.deepEqual(await write(rows), new Set(kept.map((r) => r.id)));
  const stored = await database.db
    .selectFrom('proofs')
    .selectAll()
    .where('idempotency_key', 'like', 'large-%')
    .orderBy('seq')
    .execute();
  assert.deepEqual(
    stored.map(({ seq: _seq, ...columns }) => columns),
    kept.map((r) => ({ ...r, leaf_index: null })),
  );
});

test('each stored label, and only those, can be found by part of it', async () => {
  const rows = [row('label-a', { label_folded: 'quarterly zebra report' }), row('label-b')];
  await write(rows);
  await write([row('label-a', { label_folded: 'skipped zebra entry' })]);
  const { rows: found } = await sql<{ id: string }>`select id from proofs where ${
    database.engine === 'sqlite'
      ? sql`seq in (select rowid from proofs_label_fts where label_folded glob '*zebra*')`
      : sql`label_folded like '%zebra%'`
  }`.execute(database.db);
  assert.deepEqual(
    found.map((r) => r.id),
    [rows[0]!.id],
  );
});
