import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { makeDataDir } from '../../test/helper.ts';
import { vectorsDir } from '../../test/vectors.ts';
import { proofTokenRequest, Tsa } from '../tsa/tsa.ts';
import { checkTimestampToken, parseTimestampToken } from './timestamp-token.ts';

const vector = JSON.parse(readFileSync(path.join(vectorsDir('hashproof-proof'), 'vector.json'), 'utf8'));

test('the parts a verifier reads out of the recorded token check against its proof', () => {
  const parts = parseTimestampToken(Buffer.from(vector.evidence.timestampToken, 'base64'));
  if (typeof parts === 'string') assert.fail(parts);
  assert.equal(parts.imprint.toString('hex'), vector.proof.contentHash.slice('sha256:'.length));
  assert.equal(parts.genTime.toISOString(), vector.proof.timestamp);
  assert.equal(parseTimestampToken(Buffer.from('not a token')), 'the token does not parse');
});

test('the TSA hands over exactly the parts a verifier parses out of the token it builds', async (t) => {
  const dir = makeDataDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tsa = await Tsa.open(dir, 'proofs.example.com');
  const request = proofTokenRequest({
    id: 'proof_01M86GGMZ2N2PYH67MCW3GC65W',
    contentHash: 'sha256:' + '5a'.repeat(32),
    timestamp: '2026-11-24T10:09:39.298Z',
  });
  const signature = tsa.sign(request);
  const parsed = parseTimestampToken(tsa.token(request, signature));
  if (typeof parsed === 'string') assert.fail(parsed);
  assert.deepEqual(tsa.tokenParts(request, signature), parsed);
  assert.equal(checkTimestampToken(parsed, request.hash, request.genTime, tsa.certificate), undefined);
  const other = { ...parsed, signature: tsa.sign({ ...request, genTime: new Date(0) }) };
  assert.equal(
    checkTimestampToken(other, request.hash, request.genTime, tsa.certificate),
    'the signature does not verify with the TSA certificate',
  );
});
