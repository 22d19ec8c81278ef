import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { cosign, generateCosignerKey } from '../core/cosignature.ts';
import { signNote } from '../core/signed-note.ts';
import { formatTlogProof } from '../core/tlog-proof.ts';
import { countCosignatures, witnessChecks, witnessPolicy, WitnessPolicyError } from './witness-quorum.ts';

const log = generateKeyPairSync('ed25519');
const checkpointOf = (size: number, root = Buffer.alloc(32, size).toString('base64')) =>
  signNote(`example.com/log\n${size}\n${root}\n`, 'example.com/log', log.privateKey, log.publicKey);
const textOf = (note: string) => note.slice(0, note.lastIndexOf('\n\n') + 1);
/** The note with these signature lines added after its own. */
const withLines = (note: string, ...lines: string[]) => note + lines.map((l) => `${l}\n`).join('');

const w1 = generateCosignerKey('witness.example/w1');
const w2 = generateCosignerKey('witness.example/w2');
const w3 = generateCosignerKey('witness.example/w3');
const stranger = generateCosignerKey('elsewhere.example/w');
const NOW = 1_790_000_000;

describe('counting the cosignatures of the witnesses required', () => {
  const note = checkpointOf(7);
  const text = textOf(note);
  const policy = witnessPolicy([w1.vkey, w2.vkey, w3.vkey], 2);

  test('two valid cosignatures of three witnesses meet a quorum of 2', () => {
    const count = countCosignatures(
      withLines(note, cosign(text, NOW, w1), cosign(text, NOW + 1, w3)),
      policy,
    );
    assert.equal(count.met, true);
    assert.deepEqual(
      count.cosigned.map((c) => [c.witness.name, c.timestamp]),
      [
        ['witness.example/w1', NOW],
        ['witness.example/w3', NOW + 1],
      ],
    );
    assert.deepEqual(
      count.missing.map((w) => w.name),
      ['witness.example/w2'],
    );
  });

  test('one valid cosignature of a quorum of 2 is not enough; none at all neither', () => {
    const one = countCosignatures(withLines(note, cosign(text, NOW, w2)), policy);
    assert.equal(one.met, false);
    assert.equal(one.cosigned.length, 1);
    assert.equal(one.bad.length, 0);
    assert.equal(countCosignatures(note, policy).met, false);
    // The default quorum is every witness given.
    const all = witnessPolicy([w1.vkey, w2.vkey]);
    assert.equal(all.quorum, 2);
    assert.equal(countCosignatures(withLines(note, cosign(text, NOW, w1)), all).met, false);
    assert.equal(
      countCosignatures(withLines(note, cosign(text, NOW, w1), cosign(text, NOW, w2)), all).met,
      true,
    );
  });

  test('one bad line of a given witness rejects the checkpoint, however many others verify', () => {
    const good = [cosign(text, NOW, w1), cosign(text, NOW, w2), cosign(text, NOW, w3)];
    // w3's line with its signature's last byte changed.
    const blob = Buffer.from(good[2]!.split(' ')[2]!, 'base64');
    blob[75] = (blob[75] ?? 0) ^ 1;
    const forged = `— ${w3.name} ${blob.toString('base64')}`;
    const count = countCosignatures(withLines(note, good[0]!, good[1]!, forged), policy);
    assert.equal(count.met, false);
    assert.deepEqual(
      count.bad.map((b) => [b.witness.name, b.reason]),
      [['witness.example/w3', 'the cosignature does not verify']],
    );
    // A good line of w3 beside its bad one does not save it.
    const both = countCosignatures(withLines(note, good[0]!, good[1]!, good[2]!, forged), policy);
    assert.equal(both.met, false);
    assert.equal(both.cosigned.length, 2);
    // A line of w3's name and key id that is not even a v1 cosignature (wrong length) rejects too.
    const short = `— ${w3.name} ${Buffer.concat([w3.keyId, Buffer.alloc(64)]).toString('base64')}`;
    const wrong = countCosignatures(withLines(note, good[0]!, good[1]!, short), policy);
    assert.equal(wrong.met, false);
    assert.match(wrong.bad[0]!.reason, /wrong length/);
  });

  test('two lines of one witness count once', () => {
    const twice = withLines(note, cosign(text, NOW, w1), cosign(text, NOW + 5, w1));
    const count = countCosignatures(twice, policy);
    assert.equal(count.cosigned.length, 1);
    assert.equal(count.met, false);
    // The same key given twice on the command line counts once too.
    const doubled = witnessPolicy([w1.vkey, w1.vkey]);
    assert.equal(doubled.witnesses.length, 1);
    assert.equal(doubled.quorum, 1);
    assert.throws(() => witnessPolicy([w1.vkey, w1.vkey], 2), WitnessPolicyError);
  });

  test('lines of keys not given are ignored, even one that shares a name (but not the key id)', () => {
    const impostor = generateCosignerKey('witness.example/w2');
    const lines = [
      cosign(text, NOW, stranger),
      cosign(text, NOW, impostor),
      // A garbage line of an unknown key is ignored as well.
      `— ${stranger.name} ${Buffer.concat([stranger.keyId, Buffer.alloc(72, 7)]).toString('base64')}`,
      cosign(text, NOW, w1),
      cosign(text, NOW, w3),
    ];
    const count = countCosignatures(withLines(note, ...lines), policy);
    assert.equal(count.met, true);
    assert.equal(count.bad.length, 0);
    assert.equal(countCosignatures(withLines(note, ...lines.slice(0, 3)), policy).cosigned.length, 0);
  });

  test('a cosignature over another checkpoint does not count: it rejects this one', () => {
    const other = textOf(checkpointOf(8));
    const count = countCosignatures(withLines(note, cosign(other, NOW, w1), cosign(text, NOW, w2)), policy);
    assert.equal(count.met, false);
    assert.deepEqual(
      count.bad.map((b) => b.witness.name),
      ['witness.example/w1'],
    );
    // Over the same size and root with one more extension line: another text, rejected as well.
    const extended = `${text}extension\n`;
    assert.equal(
      countCosignatures(withLines(note, cosign(extended, NOW, w1), cosign(text, NOW, w2)), policy).met,
      false,
    );
  });

  test('the checks of a proof file: one per witness, then witnesses, which counts', () => {
    const tlogProof = (n: string) => formatTlogProof({ leafIndex: 3, hashes: [], checkpoint: n });
    const met = witnessChecks(
      tlogProof(withLines(note, cosign(text, NOW, w1), cosign(text, NOW, w2))),
      policy,
    );
    assert.deepEqual(
      met.map((c) => [c.name, c.status]),
      [
        ['witness witness.example/w1', 'valid'],
        ['witness witness.example/w2', 'valid'],
        ['witness witness.example/w3', 'unchecked'],
        ['witnesses', 'valid'],
      ],
    );
    assert.match(met[0]!.message, /^Cosigned the checkpoint of size 7 at 2026-/);
    assert.match(met[3]!.message, /^2 of 3 witnesses cosigned the checkpoint of size 7; 2 required/);
    const short = witnessChecks(tlogProof(withLines(note, cosign(text, NOW, w1))), policy);
    assert.equal(short.at(-1)!.status, 'unavailable');
    assert.match(short.at(-1)!.message, /no cosignature by witness\.example\/w2 \(key id [0-9a-f]{8}\)/);
    assert.equal(short[1]!.status, 'unavailable');
    const other = textOf(checkpointOf(9));
    const bad = witnessChecks(
      tlogProof(withLines(note, cosign(other, NOW, w1), cosign(text, NOW, w2))),
      policy,
    );
    assert.equal(bad[0]!.status, 'invalid');
    assert.equal(bad.at(-1)!.status, 'invalid');
    assert.match(bad.at(-1)!.message, /^Rejected: a cosignature on the checkpoint of size 7 does not verify/);
    assert.equal(witnessChecks(undefined, policy)[0]!.status, 'unavailable');
    assert.equal(witnessChecks('not a tlog-proof', policy)[0]!.status, 'unavailable');
    assert.deepEqual(witnessChecks(undefined, witnessPolicy([])), []);
  });
});

describe('the witness options', () => {
  test('a malformed key, a quorum below 1, above the keys, or not a number is refused', () => {
    assert.throws(() => witnessPolicy(['not a key']), /--witness takes a witness's verifier key/);
    // A log key (signed-note type 0x01) is not a cosigner key (0x04).
    const logVkey = `${w1.name}+${w1.vkey.split('+')[1]}+${Buffer.concat([Buffer.from([1]), Buffer.alloc(32)]).toString('base64')}`;
    assert.throws(() => witnessPolicy([logVkey]), WitnessPolicyError);
    for (const quorum of ['0', '4', '-1', '1.5', 'two', ''])
      assert.throws(() => witnessPolicy([w1.vkey, w2.vkey, w3.vkey], quorum), /--witness-quorum takes/);
    assert.throws(() => witnessPolicy([], '1'), /--witness-quorum needs --witness/);
    assert.equal(witnessPolicy([w1.vkey, w2.vkey, w3.vkey], '3').quorum, 3);
  });
});
