import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startServer, type TestServer } from '../../test/helper.ts';
import { readDetachedFile, writeDetachedFile, type OtsTimestamp } from '../core/opentimestamps.ts';
import {
  aggregate,
  aggregatedOts,
  aggregationOrder,
  AggregationError,
  createClient,
  manifestKeysOf,
  verifyProofFile,
} from './client.ts';

const hashOf = (text: string) => 'sha256:' + createHash('sha256').update(text).digest('hex');
const bytesOf = (contentHash: string) => Buffer.from(contentHash.slice('sha256:'.length), 'hex');

describe('aggregate() in the client library', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });

  test('one notarize of the root; each file its proof file, which verifies for that file only', async () => {
    const client = createClient({ baseUrl: server.baseUrl });
    const files = ['b.txt', 'a.txt', 'c/d.txt', 'c.txt', 'e.txt'].map((path) => ({
      path,
      contentHash: hashOf(path),
    }));
    const result = await aggregate(client, { files, label: 'five', metadata: { run: '7' } });
    assert.equal(result.proof.contentHash, result.root);
    assert.deepEqual(
      result.files.map((f) => f.path),
      ['a.txt', 'b.txt', 'c.txt', 'c/d.txt', 'e.txt'],
    );
    const again = await aggregate(client, {
      files: [...files].reverse(),
      label: 'five',
      metadata: { run: '7' },
    });
    assert.equal(again.idempotentReplay, true, 'the same set in another order is the same proof');
    assert.equal(again.proof.id, result.proof.id);

    const trusted = manifestKeysOf(await client.keys());
    assert.ok(Array.isArray(trusted));
    for (const file of result.files) {
      const verdict = await verifyProofFile(file.document, { hash: file.contentHash }, trusted);
      assert.equal(verdict.verified, true, `${file.path}: ${verdict.problems.join('; ')}`);
    }
    const [first, second] = result.files;
    const swapped = await verifyProofFile(first!.document, { hash: second!.contentHash }, trusted);
    assert.equal(swapped.verified, false, "a file checked against another file's proof file");
    assert.equal(swapped.checks.find((c) => c.name === 'aggregation')?.status, 'invalid');
    assert.equal(swapped.checks.find((c) => c.name === 'contentHash')?.status, 'invalid');
    // Without `aggregation`, the shared proof is about the root, not about any one file.
    const { aggregation: _dropped, ...bare } = first!.document;
    const unaggregated = await verifyProofFile(bare, { hash: first!.contentHash }, trusted);
    assert.equal(unaggregated.verified, false);
    assert.equal(
      unaggregated.checks.some((c) => c.name === 'aggregation'),
      false,
    );
  });

  test('what is refused: a metadata key of the aggregation, a path twice, a hash that is not one, no files', async () => {
    const client = createClient({ baseUrl: server.baseUrl });
    const one = [{ path: 'a', contentHash: hashOf('a') }];
    await assert.rejects(aggregate(client, { files: one, metadata: { count: 2 } }), AggregationError);
    await assert.rejects(aggregate(client, { files: [] }), AggregationError);
    assert.throws(() => aggregationOrder([...one, ...one]), /named twice/);
    assert.throws(() => aggregationOrder([{ path: 'a', contentHash: 'md5:00' }]), AggregationError);
  });
});

test('the leaves are ordered by the UTF-8 bytes of their paths, not by UTF-16 code units', () => {
  // U+FF21 is EF BC A1 in UTF-8, U+1F600 F0 9F 98 80: bytewise FF21 first; as UTF-16 (D83D …) it is last.
  const paths = ['\u{1F600}', '\uFF21', 'Z', 'a'];
  assert.deepEqual(
    aggregationOrder(paths.map((path) => ({ path, contentHash: hashOf(path) }))).map((f) => f.path),
    ['Z', 'a', '\uFF21', '\u{1F600}'],
  );
});

test("a file's .ots: the path's operations, then the proof's; refused for a proof .ots of another root", () => {
  const digests = ['x', 'y', 'z'].map((text) => bytesOf(hashOf(text)));
  const root = Buffer.from('4b8b41c6a9e7c1c1b7bbfd4c3c70f3f0d7a8c3b9e5d3f1a2b4c6d8e0f2a4b6c8', 'hex');
  const pending = (msg: Buffer): OtsTimestamp => ({
    msg,
    attestations: [{ kind: 'pending', uri: 'https://calendar.example' }],
    ops: [],
  });
  const place = { index: 0, size: 3, path: [] as string[] };
  assert.throws(
    () => aggregatedOts(writeDetachedFile(root, pending(root)), digests[0]!, place),
    AggregationError,
  );
  // With a real path: the file's .ots starts from its digest and ends in the proof's attestation.
  const leaves = digests.map((d) =>
    createHash('sha256')
      .update(Buffer.concat([Buffer.from([0]), d]))
      .digest(),
  );
  const node = (l: Buffer, r: Buffer) =>
    createHash('sha256')
      .update(Buffer.concat([Buffer.from([1]), l, r]))
      .digest();
  const realRoot = node(node(leaves[0]!, leaves[1]!), leaves[2]!);
  const ots = aggregatedOts(writeDetachedFile(realRoot, pending(realRoot)), digests[2]!, {
    index: 2,
    size: 3,
    path: [node(leaves[0]!, leaves[1]!).toString('hex')],
  });
  const read = readDetachedFile(ots);
  assert.deepEqual(read.digest, digests[2]);
  let at = read.timestamp;
  while (at.ops.length > 0) at = at.ops[0]!.next;
  assert.deepEqual(at.msg, realRoot);
  assert.deepEqual(at.attestations, [{ kind: 'pending', uri: 'https://calendar.example' }]);
});
