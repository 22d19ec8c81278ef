import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { vectorsDir } from '../../test/vectors.ts';
import {
  formatCheckpoint,
  formatVerifierKey,
  openNote,
  parseCheckpoint,
  parseVerifierKey,
  signNote,
} from './signed-note.ts';

const VKEY = 'example.com/log/testdata+33d7b496+AeHTu4Q3hEIMHNqc6fASMsq3rKNx280NI+oO5xCFkkSx';

test('the vector key id is the first 4 bytes of SHA-256(name, newline, 0x01, key)', () => {
  assert.equal(parseVerifierKey(VKEY).keyId.toString('hex'), '33d7b496');
  assert.throws(() => parseVerifierKey(VKEY.replace('33d7b496', '33d7b497')), /does not match/);
});

test('the log checkpoint opens with the log key; a changed byte or another key fails', () => {
  const note = readFileSync(path.join(vectorsDir('tessera-log'), 'checkpoint'), 'utf8');
  const verifier = parseVerifierKey(VKEY);
  const checkpoint = parseCheckpoint(openNote(note, verifier));
  assert.equal(checkpoint.size, 15);
  assert.throws(() => openNote(note.replace('\n15\n', '\n16\n'), verifier), /does not verify/);
  const other = generateKeyPairSync('ed25519');
  assert.throws(
    () => openNote(note, parseVerifierKey(formatVerifierKey('example.com/log/testdata', other.publicKey))),
    /no signature/,
  );
});

test('our notes round-trip and our checkpoints format as the spec says', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const body = formatCheckpoint({
    origin: 'proofs.example/log',
    size: 3,
    rootHash: Buffer.alloc(32, 7),
    extensions: [],
  });
  assert.equal(body, `proofs.example/log\n3\n${Buffer.alloc(32, 7).toString('base64')}\n`);
  const note = signNote(body, 'proofs.example/log', privateKey, publicKey);
  const verifier = parseVerifierKey(formatVerifierKey('proofs.example/log', publicKey));
  assert.equal(openNote(note, verifier), body);
  assert.deepEqual(parseCheckpoint(body).rootHash, Buffer.alloc(32, 7));
});
