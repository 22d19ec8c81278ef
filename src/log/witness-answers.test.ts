import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cosign, generateCosignerKey, parseCosignerKey } from '../core/cosignature.ts';
import { addCheckpointBody, conflictSize, cosignatureOf, refusal } from './witness-answers.ts';

const TEXT = 'proofs.test/log\n7\n/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\n';
const NOTE = `${TEXT}\n— proofs.test/log AAAAAAAA\n`;
const answer = (status: number, body: string | Buffer, contentType = 'text/plain') => ({
  status,
  contentType,
  body: Buffer.from(body),
});
const NOW_MS = 1_800_000_000_000;
const now = NOW_MS / 1000;

test('the request body: old size, proof lines, an empty line, the note (tlog-witness)', () => {
  const proof = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
  assert.equal(
    addCheckpointBody(3, proof, NOTE),
    `old 3\n${proof[0]!.toString('base64')}\n${proof[1]!.toString('base64')}\n\n${NOTE}`,
  );
  assert.equal(addCheckpointBody(0, [], NOTE), `old 0\n\n${NOTE}`);
  assert.throws(() =>
    addCheckpointBody(
      1,
      Array.from({ length: 64 }, () => Buffer.alloc(32)),
      NOTE,
    ),
  );
});

test('a 409 gives a size only as text/x.tlog.size, one decimal line without leading zeros', () => {
  assert.equal(conflictSize(answer(409, '12\n', 'text/x.tlog.size')), 12);
  assert.equal(conflictSize(answer(409, '0\n', 'text/x.tlog.size; charset=utf-8')), 0);
  for (const [body, type] of [
    ['12\n', 'text/plain'],
    ['12', 'text/x.tlog.size'],
    ['012\n', 'text/x.tlog.size'],
    ['-1\n', 'text/x.tlog.size'],
    ['12\n13\n', 'text/x.tlog.size'],
    ['99999999999999999\n', 'text/x.tlog.size'],
  ] as const)
    assert.throws(() => conflictSize(answer(409, body, type)), /409 without a tree size/, body);
});

test('a refusal names the status and shows the start of the body, escaped', () => {
  assert.equal(
    refusal(answer(404, '')).message,
    'the witness does not know this log (its origin) (HTTP 404)',
  );
  const long = refusal(answer(500, `\u001b[31mboom\n${'x'.repeat(500)}`)).message;
  assert.match(long, /^the witness refused \(HTTP 500\): "\\u001b\[31mboom\\nx+…"$/);
  assert.ok(long.length < 200);
});

test("a cosignature is kept only when the witness's lines verify over the checkpoint sent", () => {
  const key = generateCosignerKey('witness.test/a');
  const other = generateCosignerKey('witness.test/b');
  const cosigner = parseCosignerKey(key.vkey);
  const line = cosign(TEXT, now, key);
  // Lines of other keys are ignored, before or after.
  const ok = cosignatureOf(answer(200, `${cosign(TEXT, now, other)}\n${line}\n`), TEXT, cosigner, NOW_MS);
  assert.deepEqual(ok, { line, timestamp: now });
  const refused: [string, RegExp][] = [
    ['', /not signature lines/],
    [`${line}`, /not signature lines/],
    [`${line}\n<html>\n`, /not signature lines/],
    [`${cosign(TEXT, now, other)}\n`, /without a cosignature by its key/],
    [`${cosign(TEXT.replace('\n7\n', '\n8\n'), now, key)}\n`, /refused: the cosignature does not verify/],
    [`${line}\n${cosign(TEXT.replace('\n7\n', '\n8\n'), now, key)}\n`, /does not verify/],
    [`${cosign(TEXT, now + 3600, key)}\n`, /in the future/],
  ];
  for (const [body, reason] of refused)
    assert.throws(() => cosignatureOf(answer(200, body), TEXT, cosigner, NOW_MS), reason, body);
  assert.throws(
    () => cosignatureOf(answer(200, Buffer.from([0xe2, 0x80, 0x0a])), TEXT, cosigner, NOW_MS),
    /not UTF-8/,
  );
  // A few minutes ahead is a clock's drift, not refused.
  assert.equal(
    cosignatureOf(answer(200, `${cosign(TEXT, now + 300, key)}\n`), TEXT, cosigner, NOW_MS).timestamp,
    now + 300,
  );
});
