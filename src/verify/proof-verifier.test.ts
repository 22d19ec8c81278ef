import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecretKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { vectorsDir } from '../../test/vectors.ts';
import { hmacVerify } from '../core/proof-signature.ts';
import { parseTlogProof } from '../core/tlog-proof.ts';
import { verifyProof, type Evidence, type Trust, type VerifiableProof } from './proof-verifier.ts';

/**
 * A proof made by the service, with its evidence and keys (scripts/proof-vector.ts); `vector.json` has a
 * token with a millisecond genTime, as tokens were made before whole seconds, `vector-seconds.json` one
 * with a whole-second genTime.
 */
const readVector = (name: string) =>
  JSON.parse(readFileSync(path.join(vectorsDir('hashproof-proof'), name), 'utf8')) as Vector;
interface Vector {
  proof: VerifiableProof;
  keys: {
    keyId: string;
    use: string;
    publicKey: string;
    validFrom: string;
    validUntil: string | null;
    verifierKey?: string;
  }[];
  evidence: { timestampToken: string; tsaCertificates: string; tlogProof: string; logVerifierKey: string };
  hmacSecret: string;
}
const vector = readVector('vector.json');

function evidence(of: Vector = vector): Evidence {
  return {
    contentHash: of.proof.contentHash,
    timestampToken: Buffer.from(of.evidence.timestampToken, 'base64'),
    inclusion: of.evidence.tlogProof,
  };
}

function trust(of: Vector = vector): Trust {
  const secret = createSecretKey(Buffer.from(of.hmacSecret, 'base64'));
  return {
    receiptKeys: of.keys.filter((k) => k.use === 'receipt'),
    tsa: of.evidence.tsaCertificates,
    logVerifierKey: of.evidence.logVerifierKey,
    hmac: (fields, signature, keyId) =>
      keyId === of.proof.keyId ? hmacVerify(secret, fields, signature) : undefined,
  };
}

const statuses = (report: ReturnType<typeof verifyProof>) =>
  Object.fromEntries(Object.entries(report.checks).map(([name, check]) => [name, check.status]));
const ALL_VALID = {
  contentHash: 'valid',
  format: 'valid',
  signature: 'valid',
  receipt: 'valid',
  timestamp: 'valid',
  inclusion: 'valid',
};

test('the known proof verifies: every check valid, leaf and tree size read from its tlog-proof', () => {
  const report = verifyProof(vector.proof, evidence(), trust());
  assert.deepEqual(statuses(report), ALL_VALID);
  assert.equal(report.verified, true);
  const { leafIndex } = parseTlogProof(vector.evidence.tlogProof);
  assert.equal(report.checks.inclusion.leafIndex, leafIndex);
  assert.ok((report.checks.inclusion.treeSize ?? 0) > leafIndex);
  assert.equal(
    report.signingMessage,
    JSON.stringify({
      contentHash: vector.proof.contentHash,
      id: vector.proof.id,
      label: vector.proof.label,
      metadataHash: vector.proof.metadataHash,
      timestamp: vector.proof.timestamp,
      v: 1,
    }),
  );
});

test('the known proof with a whole-second token verifies: every check valid', () => {
  const known = readVector('vector-seconds.json');
  const report = verifyProof(known.proof, evidence(known), trust(known));
  assert.deepEqual(statuses(report), ALL_VALID);
  assert.equal(report.verified, true);
});

test('without evidence or keys each check is unavailable, never valid, and the proof is not verified', () => {
  const report = verifyProof(vector.proof, {}, { receiptKeys: [] });
  assert.deepEqual(statuses(report), {
    contentHash: 'unavailable',
    format: 'valid',
    signature: 'unavailable',
    receipt: 'unavailable',
    timestamp: 'unavailable',
    inclusion: 'unavailable',
  });
  // Missing evidence is never a pass: the receipt and the token are required, whatever else is at hand.
  assert.equal(report.verified, false);
  assert.deepEqual(
    report.problems.map((line) => line.split(':')[0]),
    ['receipt', 'timestamp'],
  );
  const absent = verifyProof(vector.proof, { timestampToken: null, inclusion: null }, trust());
  assert.equal(absent.checks.timestamp.status, 'unavailable');
  assert.match(absent.checks.inclusion.message, /Not in the log yet/);
});

/** Each case changes one thing and names the checks that must then fail. */
const cases: {
  name: string;
  change: (p: VerifiableProof, e: Evidence, t: Trust) => void;
  invalid: string[];
}[] = [
  {
    name: 'other content',
    change: (_p, e) => (e.contentHash = 'sha256:' + '00'.repeat(32)),
    invalid: ['contentHash'],
  },
  {
    name: 'a changed label',
    change: (p) => (p.label += '!'),
    invalid: ['signature', 'receipt', 'inclusion'],
  },
  {
    name: 'a changed timestamp',
    change: (p) => (p.timestamp = new Date(Date.parse(p.timestamp) + 1).toISOString()),
    invalid: ['signature', 'receipt', 'timestamp', 'inclusion'],
  },
  {
    name: 'a changed content hash',
    change: (p, e) => {
      p.contentHash = 'sha256:' + '11'.repeat(32);
      e.contentHash = p.contentHash;
    },
    invalid: ['signature', 'receipt', 'timestamp', 'inclusion'],
  },
  {
    name: 'a malformed id',
    change: (p) => (p.id = 'proof_1'),
    invalid: ['format', 'signature', 'receipt', 'inclusion'],
  },
  {
    name: 'a forged HMAC',
    change: (p) => (p.signature = 'hmac-sha256:' + '0'.repeat(64)),
    invalid: ['signature'],
  },
  {
    name: 'an HMAC key the service never had',
    change: (p) => (p.keyId = 'hmac-0000000000000000'),
    invalid: ['signature'],
  },
  {
    name: 'a flipped receipt byte',
    change: (p) => {
      const bytes = Buffer.from(p.receipt!.signature.slice('ed25519:'.length), 'base64');
      bytes[3]! ^= 1;
      p.receipt = { keyId: p.receipt!.keyId, signature: 'ed25519:' + bytes.toString('base64') };
    },
    invalid: ['receipt'],
  },
  {
    name: 'a receipt key not yet valid at the proof’s time',
    change: (p, _e, t) => {
      t.receiptKeys = t.receiptKeys.map((k) => ({
        ...k,
        validFrom: new Date(Date.parse(p.timestamp) + 1).toISOString(),
      }));
    },
    invalid: ['receipt'],
  },
  {
    name: 'a receipt key retired before the proof’s time',
    change: (p, _e, t) => {
      t.receiptKeys = t.receiptKeys.map((k) => ({ ...k, validUntil: p.timestamp }));
    },
    invalid: ['receipt'],
  },
  {
    name: 'a token of another time-stamp authority',
    change: (_p, _e, t) => {
      const pems = vector.evidence.tsaCertificates.match(
        /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g,
      )!;
      t.tsa = pems[1]! + '\n' + pems[1]!;
    },
    invalid: ['timestamp'],
  },
  { name: 'an incomplete TSA chain', change: (_p, _e, t) => (t.tsa = 'not a chain'), invalid: ['timestamp'] },
  {
    name: 'a token cut short',
    change: (_p, e) => (e.timestampToken = (e.timestampToken as Buffer).subarray(0, 100)),
    invalid: ['timestamp'],
  },
  {
    name: 'another log key',
    change: (_p, _e, t) =>
      (t.logVerifierKey = vector.keys
        .find((k) => k.use === 'log')!
        .verifierKey!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))),
    invalid: ['inclusion'],
  },
  {
    name: 'an inclusion proof for another leaf',
    change: (_p, e) => {
      const parsed = parseTlogProof(e.inclusion as string);
      e.inclusion = { ...parsed, leafIndex: parsed.leafIndex + 1 };
    },
    invalid: ['inclusion'],
  },
  {
    name: 'a tlog-proof that does not parse',
    change: (_p, e) => (e.inclusion = 'c2sp.org/tlog-proof@v1\nindex x'),
    invalid: ['inclusion'],
  },
];

for (const { name, change, invalid } of cases) {
  test(`known answer: ${name} fails exactly ${invalid.join(', ')}`, () => {
    const proof = structuredClone(vector.proof);
    const e = evidence();
    const t = trust();
    change(proof, e, t);
    const report = verifyProof(proof, e, t);
    const failed = Object.entries(report.checks)
      .filter(([, check]) => check.status === 'invalid')
      .map(([checkName]) => checkName);
    assert.deepEqual(failed.sort(), [...invalid].sort(), JSON.stringify(report.checks, null, 1));
    assert.equal(report.verified, false);
  });
}

test('a memo answers a check it has seen without running it again', () => {
  const seen = new Map<string, unknown>();
  let computed = 0;
  const memo = <T>(key: string, compute: () => T): T => {
    if (seen.has(key)) return seen.get(key) as T;
    computed += 1;
    const value = compute();
    seen.set(key, value);
    return value;
  };
  const first = verifyProof(vector.proof, evidence(), trust(), memo);
  const afterFirst = computed;
  const second = verifyProof(vector.proof, evidence(), trust(), memo);
  assert.ok(afterFirst >= 4, `signature, receipt, token and checkpoint are memoised (${afterFirst})`);
  assert.equal(computed, afterFirst);
  assert.deepEqual(second, first);
});
