import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  api,
  expectError,
  makeDataDir,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { proofTokenRequest } from './tsa.ts';

/** openssl ts is the independent RFC 3161 verifier: every token the service issues must pass it. */
const work = mkdtempSync(path.join(os.tmpdir(), 'hashproof-tsa-'));
const file = (name: string) => path.join(work, name);

function openssl(args: string[]): { ok: boolean; output: string } {
  const run = spawnSync('openssl', args, { encoding: 'utf8' });
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}` };
}

let server: TestServer;
before(async () => {
  server = await startServer();
  const chain = await api(server.baseUrl, '/api/tsa/certs.pem');
  assert.equal(chain.status, 200);
  assert.equal(chain.headers.get('content-type'), 'application/pem-certificate-chain');
  const certs = chain.text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/g) ?? [];
  assert.equal(certs.length, 2, 'the TSA certificate, then its root');
  writeFileSync(file('tsa.pem'), certs[0]);
  writeFileSync(file('root.pem'), certs[1]!);
});
after(async () => {
  await server.close();
  server.cleanup();
});

/** The genTime `openssl ts -reply -text` shows ("Time stamp: Nov 24 10:09:40.23 2026 GMT"), epoch ms. */
function shownTime(shown: string): number {
  const line = /^Time stamp: (\w{3}) +(\d+) (\d\d):(\d\d):(\d\d)(\.\d+)? (\d{4}) GMT$/m.exec(shown);
  if (line === null) assert.fail(`no time stamp in ${shown}`);
  const [, month, day, hours, minutes, seconds, fraction, year] = line;
  return Date.parse(`${day} ${month} ${year} ${hours}:${minutes}:${seconds}${fraction ?? ''} GMT`);
}

async function tokenOf(id: string): Promise<Buffer> {
  const res = await fetch(`${server.baseUrl}/api/proofs/${id}/timestamp.tsr`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/timestamp-reply');
  return Buffer.from(await res.arrayBuffer());
}

describe('RFC 3161 tokens of proofs', () => {
  test('the TSA certificate has the critical timeStamping extended key usage and chains to the root', () => {
    const text = execFileSync('openssl', ['x509', '-in', file('tsa.pem'), '-noout', '-text'], {
      encoding: 'utf8',
    });
    assert.match(text, /X509v3 Extended Key Usage: critical\s+Time Stamping/);
    assert.match(text, /Public-Key: \(256 bit\)[\s\S]*NIST CURVE: P-256/);
    assert.ok(openssl(['verify', '-CAfile', file('root.pem'), file('tsa.pem')]).ok);
  });

  test('openssl ts -verify accepts every token for its hash and rejects it for another hash', async () => {
    for (let i = 0; i < 5; i++) {
      const created = await api(server.baseUrl, '/api/proof/notarize', {
        method: 'POST',
        body: notarizeBody({ contentHash: sampleHash(4000 + i), idempotencyKey: `tsa-${i}` }),
      });
      const proof = created.body.proof;
      assert.equal(proof.timestampToken, `/api/proofs/${proof.id}/timestamp.tsr`);
      writeFileSync(file(`${i}.tsr`), await tokenOf(proof.id));
      const hex = (proof.contentHash as string).slice('sha256:'.length);
      const good = openssl([
        'ts',
        '-verify',
        '-digest',
        hex,
        '-in',
        file(`${i}.tsr`),
        '-CAfile',
        file('root.pem'),
      ]);
      assert.ok(good.ok, good.output);
      assert.match(good.output, /Verification: OK/);
      const other = sampleHash(9000 + i).slice('sha256:'.length);
      const bad = openssl([
        'ts',
        '-verify',
        '-digest',
        other,
        '-in',
        file(`${i}.tsr`),
        '-CAfile',
        file('root.pem'),
      ]);
      assert.ok(!bad.ok);
      assert.match(bad.output, /message imprint mismatch/);
      // genTime is the proof's timestamp rounded up to the whole second, written without a fraction.
      const shown = openssl(['ts', '-reply', '-in', file(`${i}.tsr`), '-text']).output;
      const timestamp = Date.parse(proof.timestamp as string);
      assert.equal(shownTime(shown), Math.ceil(timestamp / 1000) * 1000, shown);
      assert.match(shown, /^Time stamp: \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} GMT$/m);
    }
  });

  test('the verify report checks the token; a token whose stored signature was tampered with is invalid', async () => {
    const created = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(4100), idempotencyKey: 'tsa-tamper' }),
    });
    const id = created.body.proof.id as string;
    const good = await api(server.baseUrl, `/api/verify/proofs/${id}`);
    assert.equal(good.body.checks.timestamp.status, 'valid', good.body.checks.timestamp.message);
    const { db } = server.ctx.database;
    const row = await db
      .selectFrom('proofs')
      .select('tst_signature')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    const other = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(4101), idempotencyKey: 'tsa-other' }),
    });
    const donor = await db
      .selectFrom('proofs')
      .select('tst_signature')
      .where('id', '=', other.body.proof.id as string)
      .executeTakeFirstOrThrow();
    await db.updateTable('proofs').set({ tst_signature: donor.tst_signature }).where('id', '=', id).execute();
    const bad = await api(server.baseUrl, `/api/verify/proofs/${id}`);
    assert.equal(bad.body.checks.timestamp.status, 'invalid');
    assert.equal(bad.body.verified, false);
    writeFileSync(file('tampered.tsr'), await tokenOf(id));
    const hex = (created.body.proof.contentHash as string).slice('sha256:'.length);
    assert.ok(
      !openssl(['ts', '-verify', '-digest', hex, '-in', file('tampered.tsr'), '-CAfile', file('root.pem')])
        .ok,
    );
    await db.updateTable('proofs').set({ tst_signature: row.tst_signature }).where('id', '=', id).execute();
  });

  test('an independent verifier (@sigstore/core) accepts a token for its content and rejects other content', async (t) => {
    const { RFC3161Timestamp } = await import('@sigstore/core');
    // @sigstore/core parses a genTime without a fraction or with exactly three digits; a fraction of
    // .230 (DER writes .23) made it refuse the token before whole-second genTimes. This proof is made
    // at such a time: src/tsa/token-verifiers.test.ts checks a thousand others.
    const fixed = await startServer({
      dataDir: makeDataDir(),
      clock: { now: () => Date.UTC(2026, 10, 22, 15, 30, 1, 230) },
    });
    t.after(async () => {
      await fixed.close();
      fixed.cleanup();
    });
    const content = Buffer.from(`a document ${Date.now()}`);
    const hash = 'sha256:' + (await import('node:crypto')).createHash('sha256').update(content).digest('hex');
    const created = await api(fixed.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: hash, idempotencyKey: 'tsa-sigstore' }),
    });
    const tokenRes = await fetch(
      `${fixed.baseUrl}/api/proofs/${created.body.proof.id as string}/timestamp.tsr`,
    );
    assert.equal(tokenRes.status, 200);
    const token = RFC3161Timestamp.parse(Buffer.from(await tokenRes.arrayBuffer()));
    assert.equal(token.status, 0n);
    assert.equal(created.body.proof.timestamp, '2026-11-22T15:30:01.230Z');
    assert.equal(token.signingTime.toISOString(), '2026-11-22T15:30:02.000Z');
    const chain = await (await fetch(`${fixed.baseUrl}/api/tsa/certs.pem`)).text();
    const tsaKey = new (await import('node:crypto')).X509Certificate(chain).publicKey;
    token.verify(content, tsaKey);
    assert.throws(() => token.verify(Buffer.from('another document'), tsaKey));
    const otherKey = (await import('node:crypto')).generateKeyPairSync('ec', {
      namedCurve: 'P-256',
    }).publicKey;
    assert.throws(() => token.verify(content, otherKey));
  });

  test('an unknown proof has no token: 404 in the error envelope', async () => {
    expectError(
      await api(server.baseUrl, '/api/proofs/proof_01ARZ3NDEKTSV4RRFFQ69G5FAV/timestamp.tsr'),
      404,
      'not_found',
    );
  });

  test('after a restart the same TSA certificate signs, and earlier tokens still verify', async () => {
    const created = await api(server.baseUrl, '/api/proof/notarize', {
      method: 'POST',
      body: notarizeBody({ contentHash: sampleHash(4200), idempotencyKey: 'tsa-restart' }),
    });
    const before = await api(server.baseUrl, '/api/tsa/certs.pem');
    await server.close();
    server = await startServer({ dataDir: server.dataDir });
    const afterRestart = await api(server.baseUrl, '/api/tsa/certs.pem');
    assert.equal(afterRestart.text, before.text);
    writeFileSync(file('restart.tsr'), await tokenOf(created.body.proof.id as string));
    const hex = (created.body.proof.contentHash as string).slice('sha256:'.length);
    assert.ok(
      openssl(['ts', '-verify', '-digest', hex, '-in', file('restart.tsr'), '-CAfile', file('root.pem')]).ok,
    );
  });
});

describe('RFC 3161 over HTTP (POST /api/tsa)', () => {
  async function post(body: Buffer, type = 'application/timestamp-query'): Promise<Response> {
    return fetch(`${server.baseUrl}/api/tsa`, { method: 'POST', headers: { 'content-type': type }, body });
  }

  test('an openssl ts -query gets a reply that openssl reads and verifies against the query, nonce included', async () => {
    writeFileSync(file('data.bin'), randomBytes(1000));
    const query = openssl([
      'ts',
      '-query',
      '-data',
      file('data.bin'),
      '-sha256',
      '-cert',
      '-out',
      file('q.tsq'),
    ]);
    assert.ok(query.ok, query.output);
    const sent = Date.now();
    const res = await post(readFileSync(file('q.tsq')));
    const answered = Date.now();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/timestamp-reply');
    writeFileSync(file('r.tsr'), Buffer.from(await res.arrayBuffer()));
    const shown = openssl(['ts', '-reply', '-in', file('r.tsr'), '-text']);
    assert.ok(shown.ok, shown.output);
    assert.match(shown.output, /Status: Granted\./);
    assert.match(shown.output, /Nonce: 0x[0-9A-F]+/);
    // genTime: the time of the answer rounded up to the whole second.
    const genTime = shownTime(shown.output);
    assert.equal(genTime % 1000, 0, shown.output);
    assert.ok(genTime >= sent && genTime <= Math.ceil(answered / 1000) * 1000, shown.output);
    const verified = openssl([
      'ts',
      '-verify',
      '-queryfile',
      file('q.tsq'),
      '-in',
      file('r.tsr'),
      '-CAfile',
      file('root.pem'),
    ]);
    assert.ok(verified.ok, verified.output);
    const sha512 = openssl([
      'ts',
      '-query',
      '-data',
      file('data.bin'),
      '-sha512',
      '-no_nonce',
      '-out',
      file('q512.tsq'),
    ]);
    assert.ok(sha512.ok);
    writeFileSync(
      file('r512.tsr'),
      Buffer.from(await (await post(readFileSync(file('q512.tsq')))).arrayBuffer()),
    );
    const untrusted = ['-untrusted', file('tsa.pem')];
    assert.ok(
      openssl([
        'ts',
        '-verify',
        '-queryfile',
        file('q512.tsq'),
        '-in',
        file('r512.tsr'),
        '-CAfile',
        file('root.pem'),
        ...untrusted,
      ]).ok,
    );
  });

  test('a request that does not parse, or a weak hash, gets an RFC 3161 rejection', async () => {
    const garbage = await post(Buffer.from('not a timestamp query'));
    assert.equal(garbage.status, 200);
    writeFileSync(file('garbage.tsr'), Buffer.from(await garbage.arrayBuffer()));
    assert.match(openssl(['ts', '-reply', '-in', file('garbage.tsr'), '-text']).output, /Status: Rejected\./);
    assert.ok(openssl(['ts', '-query', '-data', file('data.bin'), '-sha1', '-out', file('q1.tsq')]).ok);
    writeFileSync(
      file('r1.tsr'),
      Buffer.from(await (await post(readFileSync(file('q1.tsq')))).arrayBuffer()),
    );
    const shown = openssl(['ts', '-reply', '-in', file('r1.tsr'), '-text']).output;
    assert.match(shown, /Status: Rejected\./);
    assert.match(shown, /SHA-256, SHA-384 and SHA-512/);
  });

  test('a query over 1024 bytes is 413 in the envelope before it is decoded; one of 1024 is answered', async () => {
    // A SEQUENCE of small INTEGERs: costly to decode, and not a TimeStampReq.
    const der = (length: number) => {
      const content = Buffer.alloc(length - 4, Buffer.from([0x02, 0x01, 0x01]).toString('latin1'), 'latin1');
      return Buffer.concat([Buffer.from([0x30, 0x82, content.length >> 8, content.length & 0xff]), content]);
    };
    const tooLarge = await post(der(1025));
    assert.equal(tooLarge.status, 413);
    const envelope = (await tooLarge.json()) as { error: { code: string; message: string } };
    assert.equal(envelope.error.code, 'payload_too_large');
    assert.equal(envelope.error.message, 'The request body is too large: at most 1024 bytes');
    const atLimit = await post(der(1024));
    assert.equal(atLimit.status, 200);
    writeFileSync(file('limit.tsr'), Buffer.from(await atLimit.arrayBuffer()));
    assert.match(openssl(['ts', '-reply', '-in', file('limit.tsr'), '-text']).output, /Status: Rejected\./);
  });

  test('another content type is 415 in the error envelope', async () => {
    const res = await api(server.baseUrl, '/api/tsa', { method: 'POST', body: { hello: 'json' } });
    expectError(res, 415, 'unsupported_media_type');
  });
});

test("a proof token's serial number is the 128 bits of the proof id's ULID", () => {
  const crockford = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  const ulids = [
    '00000000000000000000000000',
    '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    '7ZZZZZZZZZZZZZZZZZZZZZZZZZ',
    ...Array.from({ length: 50 }, () =>
      Array.from(randomBytes(26), (byte, i) => crockford[i === 0 ? byte % 8 : byte % 32]).join(''),
    ),
  ];
  for (const ulid of ulids) {
    const value = [...ulid].reduce((sum, char) => sum * 32n + BigInt(crockford.indexOf(char)), 0n);
    const { serial } = proofTokenRequest(
      {
        id: `proof_${ulid}`,
        contentHash: `sha256:${'ab'.repeat(32)}`,
        timestamp: '2026-11-27T00:00:00.000Z',
      },
      'seconds',
    );
    assert.equal(serial.toString('hex'), value.toString(16).padStart(32, '0'), ulid);
  }
});
