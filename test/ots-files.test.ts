import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { leafHash } from '../src/core/merkle.ts';
import {
  attestationsOf,
  chainTo,
  graft,
  proofOps,
  readDetachedFile,
  readTimestamp,
  writeDetachedFile,
  type OtsTimestamp,
} from '../src/core/opentimestamps.ts';
import { signingMessage } from '../src/core/proof-signature.ts';
import { inclusionProof, rootHash } from './merkle-reference.ts';
import { startCalendar, type Calendar } from './ots-calendar.ts';
import { describedAttestations, reference, sortedDescriptions } from './ots-reference.ts';

/**
 * .ots files for proofs in a log, made as the anchoring does (the log's root timestamped by calendars,
 * the proof's path to that root in front), read and verified by the reference library.
 */

const sha256 = (data: Buffer) => hash('sha256', data, 'buffer');

async function fetchTimestamp(url: string, msg: Buffer, init?: RequestInit): Promise<OtsTimestamp> {
  const response = await fetch(url, init);
  assert.equal(response.status, 200, url);
  return readTimestamp(Buffer.from(await response.arrayBuffer()), msg);
}

const submit = (calendar: Calendar, digest: Buffer) =>
  fetchTimestamp(`${calendar.url}/digest`, digest, { method: 'POST', body: digest });

/** A proof's leaf, shaped as the log's: its JCS signing message. */
function fakeProof(n: number) {
  const contentHash = sha256(Buffer.from(`content ${n}`));
  const leaf = Buffer.from(
    signingMessage({
      id: `proof_01JD${String(n).padStart(22, '0')}`,
      timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
      contentHash: `sha256:${contentHash.toString('hex')}`,
      metadataHash: `sha256:${sha256(Buffer.from('{}')).toString('hex')}`,
      label: n % 2 === 0 ? `build ${n}` : 'naïve "quoted" label ✓',
    }),
  );
  return { contentHash, leaf };
}

/** One byte of `file` changed: the first byte of the first occurrence of `part`. */
function flipped(file: Buffer, part: Buffer): Buffer {
  const at = file.indexOf(part);
  assert.ok(at > 0, 'the part is in the file');
  const copy = Buffer.from(file);
  copy[at]! ^= 0x01;
  return copy;
}

test('the reference reads the .ots files of proofs, finds their content hash and verifies the block', async (t) => {
  const [confirming, waiting] = await Promise.all([startCalendar(), startCalendar()]);
  t.after(() => Promise.all([confirming.close(), waiting.close()]));
  const dir = await mkdtemp(path.join(tmpdir(), 'ots-files-'));
  t.after(() => rm(dir, { recursive: true, force: true }));

  const proofs = Array.from({ length: 7 }, (_, n) => fakeProof(n));
  const leaves = proofs.map(({ leaf }) => leafHash(leaf));
  const root = rootHash(leaves);
  const stamps = await Promise.all([submit(confirming, root), submit(waiting, root)]);
  const { height, header } = confirming.confirm();
  const commitment = confirming.submissions.items[0]!.commitment;
  const upgrade = await fetchTimestamp(
    `${confirming.url}/timestamp/${commitment.toString('hex')}`,
    commitment,
  );

  const files = proofs.map(({ leaf, contentHash }, leafIndex) => {
    const hashes = inclusionProof(leafIndex, leaves);
    const ops = proofOps({ leaf, contentHash, leafIndex, treeSize: leaves.length, hashes });
    const file = writeDetachedFile(contentHash, graft(chainTo(contentHash, ops, stamps), upgrade));
    return { contentHash, file, hashes, name: `proof-${leafIndex}.ots` };
  });
  const tampered = files.flatMap(({ contentHash, file, hashes, name }) => [
    { contentHash, file: flipped(file, hashes[0]!), name: `sibling-${name}` },
    { contentHash, file: flipped(file, Buffer.from('"id":"proof_')), name: `leaf-${name}` },
  ]);
  for (const { file, name } of [...files, ...tampered]) await writeFile(path.join(dir, name), file);

  const answers = await reference('check', {
    headers: { [height]: header.toString('hex') },
    files: [...files, ...tampered].map(({ name, contentHash }) => ({
      path: path.join(dir, name),
      contentHash: contentHash.toString('hex'),
    })),
  });
  const merkleRoot = header.subarray(36, 68).toString('hex');
  files.forEach(({ contentHash, file, name }, i) => {
    const answer = answers[i];
    assert.equal(answer.error, undefined, name);
    assert.deepEqual(
      [answer.hashOp, answer.digest, answer.digestMatches],
      ['sha256', contentHash.toString('hex'), true],
    );
    const bitcoin = answer.attestations.filter((a: any) => a.kind === 'bitcoin');
    assert.deepEqual(bitcoin, [
      { msg: merkleRoot, kind: 'bitcoin', height, time: header.readUInt32LE(68), verified: true },
    ]);
    const pending = answer.attestations.filter((a: any) => a.kind === 'pending').map((a: any) => a.uri);
    assert.deepEqual(pending, [waiting.url], name);
    const ours = readDetachedFile(file);
    assert.deepEqual(ours.digest, contentHash);
    assert.deepEqual(
      describedAttestations(ours.timestamp),
      sortedDescriptions(answer.attestations.map(({ verified: _v, time: _t, ...rest }: any) => rest)),
    );
  });
  tampered.forEach(({ file, name }, i) => {
    const answer = answers[files.length + i];
    assert.equal(answer.digestMatches, true, `${name}: the file digest is untouched`);
    const [bitcoin] = answer.attestations.filter((a: any) => a.kind === 'bitcoin');
    assert.equal(bitcoin.verified, false, name);
    assert.equal(bitcoin.error, 'Digest does not match merkleroot');
    const ours = attestationsOf(readDetachedFile(file).timestamp).find(
      ({ attestation: a }) => a.kind === 'bitcoin',
    );
    assert.notEqual(ours!.msg.toString('hex'), merkleRoot, name);
  });
});

test('a file built before the confirmation lists both calendars as pending for the reference', async (t) => {
  const calendar = await startCalendar();
  t.after(() => calendar.close());
  const dir = await mkdtemp(path.join(tmpdir(), 'ots-files-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { leaf, contentHash } = fakeProof(1);
  const ops = proofOps({ leaf, contentHash, leafIndex: 0, treeSize: 1, hashes: [] });
  const root = leafHash(leaf);
  const stamp = chainTo(contentHash, ops, [await submit(calendar, root), await submit(calendar, root)]);
  const file = path.join(dir, 'pending.ots');
  await writeFile(file, writeDetachedFile(contentHash, stamp));
  const [answer] = await reference('check', {
    headers: {},
    files: [{ path: file, contentHash: contentHash.toString('hex') }],
  });
  assert.equal(answer.digestMatches, true);
  assert.deepEqual(
    answer.attestations.map((a: any) => [a.kind, a.uri]),
    [
      ['pending', calendar.url],
      ['pending', calendar.url],
    ],
  );
  assert.deepEqual(
    new Set(answer.attestations.map((a: any) => a.msg)),
    new Set(calendar.submissions.items.map(({ commitment }) => commitment.toString('hex'))),
  );
});
