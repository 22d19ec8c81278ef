import assert from 'node:assert/strict';
import { createHash, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import {
  cosign,
  cosignedMessage,
  cosignerKeyId,
  formatCosignerKey,
  generateCosignerKey,
  parseCosignatureLine,
  parseCosignerKey,
  verifiedCosigners,
  verifyCosignature,
} from './cosignature.ts';
import { formatVerifierKey, signNote } from './signed-note.ts';
import { GO_NOTE_MISSING, goOpenNotes } from '../../test/go-note.ts';

const VECTORS = path.join(import.meta.dirname, '..', '..', 'test', 'vectors', 'cosignature');
const vectors = JSON.parse(readFileSync(path.join(VECTORS, 'vector.json'), 'utf8')) as {
  vkey: string;
  checkpoint: string;
  timestamp: number;
  line: string;
}[];

const CHECKPOINT = 'example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n';

test('the example cosignature of tlog-cosignature reads as key id jWbPPw and time 1679315147', () => {
  // The spec's example line (its key is not published, so only its layout can be checked).
  const line =
    '— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==';
  const parsed = parseCosignatureLine(line);
  assert.equal(parsed.name, 'witness.example.com/w1');
  assert.equal(parsed.keyId.toString('hex'), '8d66cf3f');
  assert.equal(parsed.timestamp, 1679315147); // the spec's "time 1679315147"
  assert.equal(parsed.signature.length, 64);
});

test('the signed message is the two header lines then the note text, exactly', () => {
  assert.equal(
    cosignedMessage(CHECKPOINT, 1679315147).toString('utf8'),
    'cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n',
  );
  assert.throws(() => cosignedMessage('no final newline', 1));
});

test('cosignatures made by Go (x/mod/sumdb/note) verify here, and ours match them byte for byte', () => {
  for (const vector of vectors) {
    const cosigner = parseCosignerKey(vector.vkey);
    assert.equal(verifyCosignature(vector.checkpoint, vector.line, cosigner), vector.timestamp);
    // The key id from the spec's formula, computed here, equals Go's.
    const raw = Buffer.from(vector.vkey.split('+').slice(2).join('+'), 'base64').subarray(1);
    assert.equal(cosignerKeyId(cosigner.name, raw).toString('hex'), vector.vkey.split('+')[1]);
    assert.equal(formatCosignerKey(cosigner.name, cosigner.publicKey), vector.vkey);
  }
  // Ed25519 is deterministic: the same key, time and checkpoint give Go's line exactly.
  const seed = createHash('sha256').update('hashproof cosignature vector key').digest();
  const privateKey = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
    format: 'der',
    type: 'pkcs8',
  });
  const cosigner = parseCosignerKey(vectors[0]!.vkey);
  for (const vector of vectors)
    assert.equal(cosign(vector.checkpoint, vector.timestamp, { ...cosigner, privateKey }), vector.line);
});

test('fail closed: wrong key, wrong timestamp, changed checkpoint, truncated blob, wrong algorithm', () => {
  const key = generateCosignerKey('witness.example/w1');
  const line = cosign(CHECKPOINT, 1700000000, key);
  const cosigner = parseCosignerKey(key.vkey);
  assert.equal(verifyCosignature(CHECKPOINT, line, cosigner), 1700000000);

  // Another key of the same name: its id differs, the line is not its.
  const other = parseCosignerKey(generateCosignerKey('witness.example/w1').vkey);
  assert.throws(() => verifyCosignature(CHECKPOINT, line, other), /another key/);
  // Another key claiming the same name and id (a collision an attacker can make): the signature fails.
  assert.throws(
    () => verifyCosignature(CHECKPOINT, line, { ...other, keyId: cosigner.keyId }),
    /does not verify/,
  );

  const blob = Buffer.from(line.split(' ')[2]!, 'base64');
  const withBlob = (bytes: Buffer) => `— witness.example/w1 ${bytes.toString('base64')}`;
  const laterTime = Buffer.from(blob);
  laterTime.writeBigUInt64BE(1700000001n, 4);
  assert.throws(() => verifyCosignature(CHECKPOINT, withBlob(laterTime), cosigner), /does not verify/);
  const changed = CHECKPOINT.replace('20852163', '20852164');
  assert.throws(() => verifyCosignature(changed, line, cosigner), /does not verify/);
  assert.throws(() => verifyCosignature(CHECKPOINT + 'ext\n', line, cosigner), /does not verify/);
  assert.throws(() => verifyCosignature(CHECKPOINT, withBlob(blob.subarray(0, 75)), cosigner), /length/);
  assert.throws(() => verifyCosignature(CHECKPOINT, withBlob(blob.subarray(0, 68)), cosigner), /length/);
  const tooLate = Buffer.from(blob);
  tooLate.writeBigUInt64BE(2n ** 63n, 4);
  assert.throws(() => verifyCosignature(CHECKPOINT, withBlob(tooLate), cosigner), /out of range/);
  assert.throws(() => verifyCosignature(CHECKPOINT, line + '=', cosigner), /malformed/);
  assert.throws(() => verifyCosignature(CHECKPOINT, line.replace('—', '-'), cosigner), /malformed/);

  // A signed-note (0x01) verifier key is not a cosigner key, even for the same public key.
  const noteKey = formatVerifierKey('witness.example/w1', cosigner.publicKey);
  assert.throws(() => parseCosignerKey(noteKey), /0x04/);
  // Its id with the right type byte but another name; a malformed key.
  const [name, id, material] = [
    key.vkey.split('+')[0]!,
    key.vkey.split('+')[1]!,
    key.vkey.split('+').slice(2),
  ];
  assert.throws(() => parseCosignerKey(`${name}x+${id}+${material.join('+')}`), /does not match/);
  assert.throws(() => parseCosignerKey(`${name}+${id}`), /malformed/);
  assert.throws(() => parseCosignerKey(`bad name+${id}+${material.join('+')}`), /malformed/);
});

test('a note: lines of unknown keys are ignored, a bad line of a known key rejects it', () => {
  const log = generateKeyPairSync('ed25519');
  const note = signNote(CHECKPOINT, 'example.com/behind-the-sofa', log.privateKey, log.publicKey);
  const [a, b] = [generateCosignerKey('w.example/a'), generateCosignerKey('w.example/b')];
  const cosigners = [a, b].map((key) => parseCosignerKey(key.vkey));
  const withA = `${note}${cosign(CHECKPOINT, 5, a)}\n`;
  assert.deepEqual(
    verifiedCosigners(withA, cosigners).map(({ cosigner, timestamp }) => [cosigner.name, timestamp]),
    [['w.example/a', 5]],
  );
  assert.deepEqual(verifiedCosigners(note, cosigners), []);
  const badB = cosign(CHECKPOINT.replace('20852163', '1'), 6, b);
  assert.throws(() => verifiedCosigners(`${withA}${badB}\n`, cosigners), /does not verify/);
  assert.throws(() => verifiedCosigners(withA.slice(0, -1), cosigners), /malformed/);
});

test("Go's note.Open accepts our cosigned notes and refuses altered ones", { skip: GO_NOTE_MISSING }, () => {
  const key = generateCosignerKey('witness.example/ours');
  const log = generateKeyPairSync('ed25519');
  const text = 'hashproof.example/log\n12\n' + createHash('sha256').update('x').digest('base64') + '\n';
  const note = signNote(text, 'hashproof.example/log', log.privateKey, log.publicKey);
  const cosigned = `${note}${cosign(text, 1764300000, key)}\n`;
  const other = generateCosignerKey('witness.example/ours');
  const answers = goOpenNotes([
    { vkey: key.vkey, note: cosigned },
    { vkey: key.vkey, note: cosigned.replace('\n12\n', '\n13\n') },
    { vkey: other.vkey, note: cosigned },
  ]);
  assert.deepEqual(answers[0], { ok: true, text });
  assert.equal(answers[1]?.ok, false);
  assert.match(answers[1]?.error ?? '', /invalid signature/);
  assert.equal(answers[2]?.ok, false);
  assert.match(answers[2]?.error ?? '', /no verifiable signatures/);
});
