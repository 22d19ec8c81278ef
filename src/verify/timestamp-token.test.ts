import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { makeDataDir } from '../../test/helper.ts';
import { vectorsDir } from '../../test/vectors.ts';
import { proofTokenRequest, Tsa } from '../tsa/tsa.ts';
import { checkTimestampToken, parseTimestampToken } from './timestamp-token.ts';

const readVector = (name: string) =>
  JSON.parse(readFileSync(path.join(vectorsDir('hashproof-proof'), name), 'utf8'));

test('the parts a verifier reads out of the recorded tokens check against their proofs', () => {
  // Recorded before genTime was rounded up to the whole second (the timestamp to the millisecond), and
  // after.
  for (const [name, rounding] of [
    ['vector.json', 0],
    ['vector-seconds.json', 1000],
  ] as const) {
    const vector = readVector(name);
    const parts = parseTimestampToken(Buffer.from(vector.evidence.timestampToken, 'base64'));
    if (typeof parts === 'string') assert.fail(parts);
    assert.equal(parts.imprint.toString('hex'), vector.proof.contentHash.slice('sha256:'.length));
    const timestamp = Date.parse(vector.proof.timestamp);
    const expected = rounding === 0 ? timestamp : Math.ceil(timestamp / rounding) * rounding;
    assert.equal(parts.genTime.getTime(), expected, name);
  }
  assert.equal(parseTimestampToken(Buffer.from('not a token')), 'the token does not parse');
});

const proof = {
  id: 'proof_01M86GGMZ2N2PYH67MCW3GC65W',
  contentHash: 'sha256:' + '5a'.repeat(32),
  timestamp: '2026-11-24T10:09:39.298Z',
};

test('the TSA hands over exactly the parts a verifier parses out of the token it builds, in either form', async (t) => {
  const dir = makeDataDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tsa = await Tsa.open(dir, 'proofs.example.com');
  const expected = { seconds: '2026-11-24T10:09:40.000Z', millis: proof.timestamp };
  for (const format of ['seconds', 'millis'] as const) {
    const request = proofTokenRequest(proof, format);
    const signature = tsa.sign(request);
    const parsed = parseTimestampToken(tsa.token(request, signature));
    if (typeof parsed === 'string') assert.fail(parsed);
    assert.equal(parsed.genTime.toISOString(), expected[format]);
    assert.deepEqual(tsa.tokenParts(request, signature), parsed);
    const timestamp = new Date(proof.timestamp);
    assert.equal(checkTimestampToken(parsed, request.hash, timestamp, tsa.certificate), undefined);
    const other = { ...parsed, signature: tsa.sign({ ...request, genTime: new Date(0) }) };
    assert.equal(
      checkTimestampToken(other, request.hash, timestamp, tsa.certificate),
      'the signature does not verify with the TSA certificate',
    );
  }
});

test('genTime holds from the timestamp to just before the next second after it, and nowhere else', async (t) => {
  const dir = makeDataDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tsa = await Tsa.open(dir, 'proofs.example.com');
  const timestamp = new Date(proof.timestamp);
  const request = proofTokenRequest(proof, 'millis');
  const checked = (offsetMs: number) => {
    const shifted = { ...request, genTime: new Date(timestamp.getTime() + offsetMs) };
    const parts = tsa.tokenParts(shifted, tsa.sign(shifted));
    return checkTimestampToken(parts, request.hash, timestamp, tsa.certificate);
  };
  for (const offset of [0, 1, 702, 999]) assert.equal(checked(offset), undefined, `${offset} ms after`);
  for (const offset of [-1000, -1, 1000, 1001, 60_000])
    assert.equal(checked(offset), 'genTime is not the proof timestamp rounded up to the whole second');
});
