import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { attestationsOf, readTimestamp, type OtsTimestamp } from '../src/core/opentimestamps.ts';
import { startCalendar, type Calendar } from './ots-calendar.ts';
import { describedAttestations, reference, sortedDescriptions } from './ots-reference.ts';

async function submit(calendar: Calendar, digest: Buffer): Promise<OtsTimestamp> {
  const response = await fetch(`${calendar.url}/digest`, { method: 'POST', body: digest });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/octet-stream');
  return readTimestamp(Buffer.from(await response.arrayBuffer()), digest);
}

async function upgradeOf(calendar: Calendar, commitment: Buffer): Promise<OtsTimestamp | number> {
  const response = await fetch(`${calendar.url}/timestamp/${commitment.toString('hex')}`);
  if (response.status !== 200) return response.status;
  return readTimestamp(Buffer.from(await response.arrayBuffer()), commitment);
}

/** The message of the one pending attestation of `calendar` in `t`: the calendar's commitment. */
const commitmentIn = (t: OtsTimestamp, calendar: Calendar): Buffer =>
  attestationsOf(t).find(({ attestation: a }) => a.kind === 'pending' && a.uri === calendar.url)!.msg;

test('the calendar answers digests with pending timestamps, and upgrades them once confirmed', async (t) => {
  const calendar = await startCalendar();
  t.after(() => calendar.close());
  const digest = randomBytes(32);
  const stamp = await submit(calendar, digest);
  const [submission] = await calendar.submissions.until((s) => s.length === 1, { what: 'the submission' });
  assert.deepEqual(submission!.digest, digest);
  assert.deepEqual(attestationsOf(stamp), [
    { msg: submission!.commitment, attestation: { kind: 'pending', uri: calendar.url } },
  ]);
  assert.deepEqual(stamp.ops[0]!.op.op, 'append');
  assert.equal((stamp.ops[0]!.op as { arg: Buffer }).arg.length, 16, 'a 16-byte nonce');

  const pendingResponse = await fetch(`${calendar.url}/timestamp/${submission!.commitment.toString('hex')}`);
  assert.equal(pendingResponse.status, 404);
  assert.equal(await pendingResponse.text(), 'Pending confirmation in Bitcoin blockchain');
  assert.equal(await upgradeOf(calendar, randomBytes(44)), 404, 'an unknown commitment');
  assert.equal((await fetch(`${calendar.url}/timestamp/xyz`)).status, 400);
  for (const body of [Buffer.alloc(0), Buffer.alloc(65)]) {
    assert.equal(
      (await fetch(`${calendar.url}/digest`, { method: 'POST', body })).status,
      400,
      `${body.length}`,
    );
  }

  const { height, header } = calendar.confirm();
  assert.equal(header.length, 80);
  const upgrade = await upgradeOf(calendar, submission!.commitment);
  assert.ok(typeof upgrade !== 'number');
  assert.deepEqual(attestationsOf(upgrade), [
    { msg: header.subarray(36, 68), attestation: { kind: 'bitcoin', height } },
  ]);
  const later = await submit(calendar, randomBytes(20));
  assert.equal(await upgradeOf(calendar, commitmentIn(later, calendar)), 404, 'a later digest waits');
  assert.equal(calendar.confirm().height, height + 1);
  assert.ok(typeof (await upgradeOf(calendar, commitmentIn(later, calendar))) !== 'number');
});

test('the reference calendar client submits to the calendar and fetches the upgrade', async (t) => {
  const calendar = await startCalendar();
  t.after(() => calendar.close());
  const digest = randomBytes(32);
  const submitted = await reference('calendar', { url: calendar.url, digest: digest.toString('hex') });
  const stamp = readTimestamp(Buffer.from(submitted.bytes, 'hex'), digest);
  assert.deepEqual(describedAttestations(stamp), sortedDescriptions(submitted.attestations));
  const commitment = commitmentIn(stamp, calendar).toString('hex');
  assert.deepEqual(await reference('calendar', { url: calendar.url, commitment }), {
    notFound: 'Pending confirmation in Bitcoin blockchain',
  });
  const { height, header } = calendar.confirm();
  const upgraded = await reference('calendar', { url: calendar.url, commitment });
  assert.deepEqual(upgraded.attestations, [
    { msg: header.subarray(36, 68).toString('hex'), kind: 'bitcoin', height },
  ]);
});

test('a failing calendar answers 500, a hanging one never answers, and both can be closed', async (t) => {
  const calendar = await startCalendar();
  t.after(() => calendar.close());
  calendar.failNext(2);
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    statuses.push((await fetch(`${calendar.url}/digest`, { method: 'POST', body: randomBytes(32) })).status);
  }
  assert.deepEqual(statuses, [500, 500, 200]);
  calendar.down = 'error';
  assert.equal(
    (await fetch(`${calendar.url}/digest`, { method: 'POST', body: randomBytes(32) })).status,
    500,
  );
  calendar.down = 'hang';
  const abort = new AbortController();
  const hanging = fetch(`${calendar.url}/digest`, {
    method: 'POST',
    body: randomBytes(32),
    signal: abort.signal,
  });
  await calendar.requests.until((r) => r.at(-1)?.status === 'hung', { what: 'the request that hangs' });
  abort.abort();
  await assert.rejects(hanging, { name: 'AbortError' });
  assert.deepEqual(
    calendar.requests.items.map((r) => r.status),
    [500, 500, 200, 500, 'hung'],
  );
  assert.equal(calendar.submissions.items.length, 1);
});
