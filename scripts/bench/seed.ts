import { parseArgs } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { canonicalJson } from '../../src/core/canonical-json.ts';
import { metadataHash, sha256Hex } from '../../src/core/hashing.ts';
import { createIdGenerator } from '../../src/core/ids.ts';
import { hmacSign, signingMessage } from '../../src/core/proof-signature.ts';
import { signReceipt } from '../../src/core/receipt.ts';
import { openDatabase } from '../../src/db/index.ts';
import { importProofs, type NewProofRow } from '../../src/proofs/proofs-import.ts';
import { Keyring } from '../../src/keys/keyring.ts';
import { proofTokenRequest, Tsa } from '../../src/tsa/tsa.ts';

const WORDS = [
  'release',
  'build',
  'model',
  'dataset',
  'report',
  'invoice',
  'audit',
  'contract',
  'photo',
  'log',
];

/** A deterministic, well-spread content hash for seed number `n`. */
export const seedHash = (n: number): string => 'sha256:' + sha256Hex(`seed-${n}`);
export const seedLabel = (n: number): string => `${WORDS[n % WORDS.length]} ${n}`;
/** The metadata of every seeded proof. */
export const SEED_METADATA = { source: 'seed' };

/** At most this many ids of seeded proofs are returned, spread evenly over all of them. */
const SAMPLE_SIZE = 20_000;

/**
 * Fills the configured database with `count` valid, signed proofs (the same rows the service would
 * write), in large transactions. Reads DATABASE_URL and SIGNING_KEYS_DIR like the service. Returns the
 * ids of up to 20,000 of them, spread evenly, for reads of many different proofs.
 */
export async function seed(
  env: NodeJS.ProcessEnv,
  count: number,
  log: (line: string) => void = () => {},
): Promise<string[]> {
  const sample: string[] = [];
  const every = Math.max(1, Math.ceil(count / SAMPLE_SIZE));
  const config = loadConfig(env);
  const keyring = Keyring.open(config.signingKeysDir);
  const tsa = await Tsa.open(config.signingKeysDir, new URL(config.publicBaseUrl).host);
  const database = await openDatabase(config.database);
  const ids = createIdGenerator();
  const key = keyring.active;
  const receiptKey = keyring.activeReceiptKey;
  const start = Date.now() - count;
  const metaHash = metadataHash(SEED_METADATA);
  const batchSize = 2000;
  try {
    for (let done = 0; done < count; done += batchSize) {
      const rows: NewProofRow[] = [];
      for (let n = done; n < Math.min(count, done + batchSize); n++) {
        const createdAt = start + n;
        const id = ids.next('proof', createdAt);
        if (n % every === 0) sample.push(id);
        const fields = {
          id,
          timestamp: new Date(createdAt).toISOString(),
          contentHash: seedHash(n),
          metadataHash: metaHash,
          label: seedLabel(n),
        };
        rows.push({
          id,
          created_at: createdAt,
          content_hash: fields.contentHash,
          label: fields.label,
          label_folded: fields.label.toLowerCase(),
          metadata_hash: metaHash,
          metadata_keys: '["source"]',
          signature: hmacSign(key.keyObject, fields),
          key_id: key.keyId,
          idempotency_scope: 'public',
          idempotency_key: `seed-${n}`,
          request_fingerprint: sha256Hex(
            canonicalJson({ contentHash: fields.contentHash, label: fields.label, metadataHash: metaHash }),
          ),
          account_id: null,
          created_via: 'demo',
          payment_network: null,
          payment_payer: null,
          payment_transaction: null,
          payment_amount: null,
          receipt: signReceipt(receiptKey.privateKey, signingMessage(fields)),
          receipt_key_id: receiptKey.keyId,
          tst_signature: tsa.sign(proofTokenRequest(fields, 'seconds')).toString('base64'),
          tst_key_id: tsa.keyId,
          tst_format: 'seconds',
        });
      }
      await importProofs(database, rows);
      if ((done / batchSize) % 50 === 0) log(`seeded ${Math.min(count, done + batchSize)} of ${count}`);
    }
  } finally {
    await database.close();
  }
  return sample;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '100000' } } });
  const count = Number(values.count);
  const started = Date.now();
  await seed(process.env, count, (line) => console.log(line));
  console.log(`seeded ${count} proofs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
