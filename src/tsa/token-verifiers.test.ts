import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { makeDataDir } from '../../test/helper.ts';
import { createIdGenerator } from '../core/ids.ts';
import { Keyring } from '../keys/keyring.ts';
import { describeRequest } from '../proofs/notarize-request.ts';
import { proofDocument, rowFromInsert, storedToken } from '../proofs/proof-row.ts';
import { signNewProof } from '../proofs/proof-signer.ts';
import { checkTimestampToken, checkTsaChain, parseTimestampToken } from '../verify/timestamp-token.ts';
import { proofTokenRequest, Tsa } from './tsa.ts';

/**
 * Every token a proof gets is read and accepted by the mainstream RFC 3161 verifiers: OpenSSL
 * (`openssl ts -verify`), sigstore-js (@sigstore/verify) and Bouncy Castle's TSP (Java), besides this
 * project's own. A thousand proofs, one for each millisecond of the second (.000 to .999) at random
 * seconds of the certificate's validity, are made as the service makes them (`signNewProof`) and their
 * tokens rebuilt as it serves them; a hundred of them are then tampered with in four ways, and every
 * verifier must refuse every one.
 */

const COUNT = 1000;
/** Debian's Bouncy Castle (libbcpkix-java and what it depends on). */
const BOUNCY_CASTLE = ['bcprov', 'bcpkix', 'bcutil'].map((jar) => `/usr/share/java/${jar}.jar`).join(':');
const BOUNCY_CASTLE_CHECK = path.join(import.meta.dirname, '..', '..', 'test', 'tsp', 'BouncyCastleTsp.java');

interface Sample {
  name: string;
  token: Buffer;
  /** What the token is checked against: the content, its SHA-256, and the proof's timestamp. */
  content: Buffer;
  hash: Buffer;
  timestamp: Date;
  /** The genTime a verifier should read: the timestamp rounded up to the whole second. */
  genTime: number;
}

const dir = makeDataDir();
const seed = Date.now();
let tsa: Tsa;
const good: Sample[] = [];
let tampered: Sample[] = [];

before(async () => {
  tsa = await Tsa.open(dir, 'proofs.example.com');
  writeFileSync(path.join(dir, 'tsa.pem'), tsa.certificate.toString());
  writeFileSync(path.join(dir, 'root.pem'), tsa.root.toString());
  const keyring = Keyring.open(dir);
  const ids = createIdGenerator();
  // Bouncy Castle and sigstore want the certificate valid at genTime; OpenSSL checks it today.
  const day = 86_400;
  const from = Math.ceil(tsa.certificate.validFromDate.getTime() / 1000) + day;
  const to = Math.floor(tsa.certificate.validToDate.getTime() / 1000) - day;
  const seconds = fc.sample(fc.integer({ min: from, max: to }), { numRuns: COUNT, seed });
  const contents = fc.sample(fc.uint8Array({ maxLength: 200 }), { numRuns: COUNT, seed: seed + 1 });
  for (let i = 0; i < COUNT; i++) {
    const createdAt = seconds[i]! * 1000 + i; // every millisecond remainder once
    const content = Buffer.from(contents[i]!);
    const hash = createHash('sha256').update(content).digest();
    const body = {
      contentHash: `sha256:${hash.toString('hex')}`,
      label: `token ${i}`,
      idempotencyKey: `${i}`,
    };
    const deps = { keyring, tsa, ids, clock: { now: () => createdAt } };
    const signed = await signNewProof(deps, body, { kind: 'public' }, describeRequest(body), 'public');
    // As the service serves it (proofs-service.ts, `timestampToken`): rebuilt from the stored row.
    const row = rowFromInsert(signed);
    const proof = proofDocument(row, true, 'proofs.example.com/log');
    const stored = storedToken(row);
    assert.equal(stored?.format, 'seconds');
    const token = tsa.token(proofTokenRequest(proof, stored.format), Buffer.from(stored.signature, 'base64'));
    const timestamp = new Date(proof.timestamp);
    const genTime = Math.ceil(createdAt / 1000) * 1000;
    good.push({ name: `${proof.timestamp} (#${i})`, token, content, hash, timestamp, genTime });
  }
  tampered = good.filter((_, i) => i % 10 === Math.floor(i / 10) % 10).flatMap(tamper);
  assert.equal(tampered.length, 400);
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** The DER GeneralizedTime of a whole second: tag 0x18, 15 characters, YYYYMMDDHHMMSSZ (no fraction). */
function wholeSecondDer(ms: number): Buffer {
  const text = new Date(ms).toISOString().slice(0, 19).replace(/[-:T]/g, '') + 'Z';
  return Buffer.concat([Buffer.from([0x18, 0x0f]), Buffer.from(text, 'ascii')]);
}

/** Four broken versions of a good token: imprint, genTime, signature changed, or another content. */
function tamper(sample: Sample): Sample[] {
  const edited = (name: string, at: number, value: (byte: number) => number): Sample => {
    assert.ok(at >= 0, `${name}: not found in ${sample.name}`);
    const token = Buffer.from(sample.token);
    token[at] = value(token[at]!);
    return { ...sample, name: `${sample.name} with ${name}`, token };
  };
  // The seconds' last digit of genTime (after the tag, the length and 13 characters) moves to another.
  const genTime = sample.token.indexOf(wholeSecondDer(sample.genTime));
  const digit = genTime < 0 ? -1 : genTime + 2 + 13;
  const content = Buffer.concat([sample.content, Buffer.from('another')]);
  const hash = createHash('sha256').update(content).digest();
  return [
    edited('another imprint', sample.token.indexOf(sample.hash), (byte) => byte ^ 0x01),
    edited('another genTime', digit, (byte) => 0x30 + ((byte - 0x30 + 1) % 10)),
    // The ECDSA signature ends the token; its last byte is the low byte of s.
    edited('another signature', sample.token.length - 1, (byte) => byte ^ 0x01),
    { ...sample, name: `${sample.name} for another content`, content, hash },
  ];
}

/** The samples each verifier refused, by name, with its reason; the others it accepted. */
type Verifier = (samples: Sample[]) => Promise<Map<string, string>>;

/** How many samples got the verdict they should; fails naming the first few that did not. */
function expectVerdicts(refused: Map<string, string>, samples: Sample[], shouldAccept: boolean): number {
  const wrong = shouldAccept
    ? samples.filter((s) => refused.has(s.name)).map((s) => `${s.name}: ${refused.get(s.name)}`)
    : samples.filter((s) => !refused.has(s.name)).map((s) => s.name);
  const right = samples.length - wrong.length;
  assert.equal(
    right,
    samples.length,
    `seed ${seed}: ${wrong.length} wrong, first ${wrong.slice(0, 5).join('; ')}`,
  );
  return right;
}

function run(
  command: string,
  args: string[],
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin?.end(input);
  });
}

/** `openssl ts -verify` on each token, as many at once as there are cores (up to 8). */
const openssl: Verifier = async (samples) => {
  const refused = new Map<string, string>();
  const pem = (name: string) => path.join(dir, name);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < samples.length; i = next++) {
      const sample = samples[i]!;
      const file = path.join(dir, `${i}.tsr`);
      writeFileSync(file, sample.token);
      const { code, stdout, stderr } = await run('openssl', [
        'ts', '-verify', '-digest', sample.hash.toString('hex'), '-in', file,
        '-CAfile', pem('root.pem'), '-untrusted', pem('tsa.pem'),
      ]); // prettier-ignore
      if (code !== 0 || !/^Verification: OK$/m.test(stdout))
        refused.set(sample.name, `${stdout}${stderr}`.trim());
      rmSync(file);
    }
  };
  await Promise.all(Array.from({ length: Math.min(8, Math.max(2, os.availableParallelism())) }, worker));
  return refused;
};

/** @sigstore/verify's RFC 3161 check: chain at genTime, signer, imprint of the content, digest, signature. */
const sigstore: Verifier = async (samples) => {
  const { RFC3161Timestamp, X509Certificate } = await import('@sigstore/core');
  const { getTSATimestamp } = (await import('@sigstore/verify/dist/timestamp/index.js')) as unknown as {
    getTSATimestamp: (timestamp: unknown, data: Uint8Array, authorities: unknown[]) => { timestamp: Date };
  };
  const certChain = [tsa.certificate, tsa.root].map((c) => X509Certificate.parse(c.toString()));
  const authority = { certChain, validFor: { start: new Date(0), end: new Date(8.64e15) } };
  const refused = new Map<string, string>();
  for (const sample of samples) {
    try {
      const read = getTSATimestamp(RFC3161Timestamp.parse(Buffer.from(sample.token)), sample.content, [
        authority,
      ]);
      if (read.timestamp.getTime() !== sample.genTime)
        refused.set(sample.name, `genTime ${read.timestamp.toISOString()}`);
    } catch (error) {
      refused.set(sample.name, (error as Error).message);
    }
  }
  return refused;
};

/** Bouncy Castle's TimeStampToken.validate, in one JVM for every token (test/tsp/BouncyCastleTsp.java). */
const bouncyCastle: Verifier = async (samples) => {
  const input = samples.map((s) => `${s.token.toString('base64')} ${s.hash.toString('hex')} ${s.genTime}\n`);
  const files = ['tsa.pem', 'root.pem'].map((name) => path.join(dir, name));
  const { code, stdout, stderr } = await run(
    'java',
    ['-cp', BOUNCY_CASTLE, BOUNCY_CASTLE_CHECK, ...files],
    input.join(''),
  );
  const lines = stdout.trimEnd().split('\n');
  assert.equal(code, 0, stderr);
  assert.equal(lines.length, samples.length, `${stdout.slice(0, 2000)}${stderr}`);
  const refused = new Map<string, string>();
  samples.forEach((sample, i) => {
    if (lines[i] !== `ok ${sample.genTime}`) refused.set(sample.name, lines[i]!);
  });
  return refused;
};

/** This project's verifier (verify/timestamp-token.ts), as `hashproof verify` runs it. */
const own: Verifier = async (samples) => {
  assert.equal(checkTsaChain(tsa.certificate, tsa.root), undefined);
  const refused = new Map<string, string>();
  for (const sample of samples) {
    const parts = parseTimestampToken(sample.token);
    const problem =
      typeof parts === 'string'
        ? parts
        : parts.genTime.getTime() !== sample.genTime
          ? `genTime ${parts.genTime.toISOString()}`
          : checkTimestampToken(parts, sample.hash, sample.timestamp, tsa.certificate);
    if (problem !== undefined) refused.set(sample.name, problem);
  }
  return refused;
};

const VERIFIERS: [string, Verifier][] = [
  ['OpenSSL (openssl ts -verify)', openssl],
  ['@sigstore/verify', sigstore],
  ['Bouncy Castle (TimeStampToken.validate)', bouncyCastle],
  ['hashproof’s own verifier', own],
];

describe(`${COUNT} proof tokens with whole-second genTimes`, () => {
  test('cover every millisecond of the second, and each genTime is its timestamp rounded up', () => {
    assert.equal(good.length, COUNT);
    assert.equal(new Set(good.map((s) => s.timestamp.getTime() % 1000)).size, 1000);
    for (const sample of good) {
      const parts = parseTimestampToken(sample.token);
      if (typeof parts === 'string') assert.fail(parts);
      assert.equal(parts.genTime.getTime(), sample.genTime);
      const after = sample.genTime - sample.timestamp.getTime();
      assert.ok(after >= 0 && after < 1000, sample.name);
      assert.ok(sample.token.includes(wholeSecondDer(sample.genTime)), sample.name);
    }
  });

  for (const [name, verifier] of VERIFIERS) {
    test(`${name} accepts ${COUNT}/${COUNT} and refuses every tampered one`, async (t) => {
      const accepted = expectVerdicts(await verifier(good), good, true);
      const refused = expectVerdicts(await verifier(tampered), tampered, false);
      t.diagnostic(`accepted ${accepted}/${good.length}, refused ${refused}/${tampered.length} tampered`);
    });
  }
});
