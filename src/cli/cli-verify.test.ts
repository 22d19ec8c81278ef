import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cli, server, withCliServer, work } from './cli-test-setup.ts';

withCliServer();

describe('hashproof verify', () => {
  test('a good file passes (exit 0); a modified file or a tampered proof fails (exit 1)', async () => {
    const file = path.join(work, 'model.bin');
    writeFileSync(file, 'weights v1');
    assert.equal((await cli(['stamp', file])).code, 0);
    const offline = await cli(['verify', file]);
    assert.equal(offline.code, 0, offline.stdout + offline.stderr);
    assert.match(offline.stdout, /^ok {3}receipt: The Ed25519 receipt verifies/m);
    assert.match(offline.stdout, /^ok {3}timestamp: The RFC 3161 token names this hash/m);
    assert.match(offline.stdout, /^ok {3}inclusion: Leaf \d+ is included in the signed tree/m);
    const good = await cli(['verify', file, '--online']);
    assert.equal(good.code, 0, good.stdout + good.stderr);
    assert.match(good.stdout, /^ok {3}contentHash/m);
    assert.match(good.stdout, /^ok {3}signature: The service confirms/m);

    writeFileSync(file, 'weights v2');
    const modified = await cli(['verify', file]);
    assert.equal(modified.code, 1);
    assert.match(modified.stdout, /^FAIL contentHash/m);

    writeFileSync(file, 'weights v1');
    const proofFile = `${file}.proof.json`;
    const document = JSON.parse(readFileSync(proofFile, 'utf8'));
    document.proof.label = 'forged';
    const tampered = path.join(work, 'tampered.proof.json');
    writeFileSync(tampered, JSON.stringify(document));
    const forgedOffline = await cli(['verify', file, tampered, '--json']);
    assert.equal(forgedOffline.code, 1, 'the receipt catches the change with no service at all');
    assert.equal(
      JSON.parse(forgedOffline.stdout).checks.find((c: { name: string }) => c.name === 'receipt').status,
      'invalid',
    );
    const checkOf = (run: { stdout: string }, name: string) =>
      (JSON.parse(run.stdout).checks as { name: string; status: string }[]).find((c) => c.name === name)
        ?.status;
    // The token and the log catch a changed timestamp or hash on their own, offline.
    const retimed = JSON.parse(readFileSync(proofFile, 'utf8'));
    retimed.proof.timestamp = new Date(Date.parse(retimed.proof.timestamp) - 86_400_000).toISOString();
    writeFileSync(tampered, JSON.stringify(retimed));
    const backdated = await cli(['verify', file, tampered, '--json']);
    assert.equal(backdated.code, 1);
    assert.equal(checkOf(backdated, 'timestamp'), 'invalid');
    assert.equal(checkOf(backdated, 'inclusion'), 'invalid');
    const forgedLog = JSON.parse(readFileSync(proofFile, 'utf8'));
    forgedLog.evidence.tlogProof = forgedLog.evidence.tlogProof.replace(
      /\n(\d+)\n/,
      (_m: string, n: string) => `\n${Number(n) + 1}\n`,
    );
    writeFileSync(tampered, JSON.stringify(forgedLog));
    const forgedCheckpoint = await cli(['verify', file, tampered, '--json']);
    assert.equal(forgedCheckpoint.code, 1);
    assert.equal(checkOf(forgedCheckpoint, 'inclusion'), 'invalid');

    writeFileSync(tampered, JSON.stringify(document));
    const forged = await cli(['verify', file, tampered, '--online', '--json']);
    assert.equal(forged.code, 1);
    const report = JSON.parse(forged.stdout);
    assert.equal(report.ok, false);
    assert.equal(report.checks.find((c: { name: string }) => c.name === 'signature').status, 'invalid');
  });
});

describe('the command explains what is wrong', () => {
  test('a missing file or proof file, a service address that is not one, something that is not a file: exit 2, naming it', async () => {
    const missing = await cli(['verify', path.join(work, 'nope.txt')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no such file: .*nope\.txt/);
    assert.doesNotMatch(missing.stderr, /ENOENT/);

    // A key manifest to pin that is not there: the file to verify is fine, the --keys file is named.
    const kept = path.join(work, 'kept.txt');
    writeFileSync(kept, 'kept content');
    assert.equal((await cli(['stamp', kept])).code, 0);
    const noKeys = await cli(['verify', kept, '--keys', path.join(work, 'nosuch.json')]);
    assert.equal(noKeys.code, 2);
    assert.match(noKeys.stderr, /^hashproof: --keys .*nosuch\.json: no such file \(save the service's/);
    assert.doesNotMatch(noKeys.stderr, /ENOENT|\n\s+at /);

    const lonely = path.join(work, 'lonely.txt');
    writeFileSync(lonely, 'never stamped');
    const noProof = await cli(['verify', lonely]);
    assert.equal(noProof.code, 2);
    assert.match(
      noProof.stderr,
      /no proof file .*lonely\.txt\.proof\.json \(hashproof stamp .*lonely\.txt writes it/,
    );

    const notJson = path.join(work, 'not-json.proof.json');
    writeFileSync(notJson, 'hello');
    const garbled = await cli(['verify', lonely, notJson]);
    assert.equal(garbled.code, 2);
    assert.match(garbled.stderr, /not-json\.proof\.json is not a proof file/);

    const badUrl = await cli(['show', 'proof_01M86S9D85GH6M2M9CCB5ZT5WS', '--url', 'notaurl']);
    assert.equal(badUrl.code, 2);
    assert.match(badUrl.stderr, /--url must be the service's http\(s\) address/);

    const device = await cli(['stamp', '/dev/null']);
    assert.equal(device.code, 2);
    assert.match(device.stderr, /\/dev\/null is not a regular file/);
  });

  test('a label of two lines is refused as one line only, before anything is hashed or sent', async () => {
    const file = path.join(work, 'labelled.txt');
    writeFileSync(file, 'labelled content');
    const twoLines = await cli(['stamp', file, '--label', 'first line\nsecond line']);
    assert.equal(twoLines.code, 2);
    assert.match(twoLines.stderr, /--label must be one line only/);
    assert.doesNotMatch(twoLines.stderr, /pattern|\\u00/);
    assert.equal(existsSync(`${file}.proof.json`), false, 'no proof file was written');
    const long = await cli(['stamp', file, '--label', 'x'.repeat(121)]);
    assert.equal(long.code, 2);
    assert.match(long.stderr, /--label is 121 characters long; at most 120/);

    // The service says the same to any other client, with no regular expression in the answer.
    const res = await fetch(`${server.baseUrl}/api/proof/notarize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        contentHash: `sha256:${'a'.repeat(64)}`,
        label: 'first line\nsecond line',
        idempotencyKey: 'two-line-label',
      }),
    });
    assert.equal(res.status, 400);
    const { error } = (await res.json()) as { error: { message: string } };
    assert.equal(
      error.message,
      'Invalid request: /label must be one line only (no line breaks, tabs or other control characters)',
    );
  });

  test('standard input: stamp - prints its proof file, verify - checks content against a named proof file', async () => {
    const content = 'piped content\n';
    const stamped = await cli(['stamp', '-', '--label', 'piped'], { stdin: content });
    assert.equal(stamped.code, 0, stamped.stderr);
    const document = JSON.parse(stamped.stdout);
    assert.equal(document.proof.label, 'piped');
    assert.ok(document.evidence.timestampToken, 'the whole proof file, with its evidence');
    assert.match(stamped.stderr, /^stamped standard input {2}http\S+\/proof\/proof_\w+\n$/);
    const proofFile = path.join(work, 'piped.proof.json');
    writeFileSync(proofFile, stamped.stdout);

    const checked = await cli(['verify', '-', proofFile], { stdin: content });
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    assert.match(checked.stdout, /^ok {3}contentHash: /m);
    const changed = await cli(['verify', '-', proofFile], { stdin: 'other content\n' });
    assert.equal(changed.code, 1);
    assert.match(changed.stdout, /^FAIL contentHash: /m);
    const unnamed = await cli(['verify', '-'], { stdin: content });
    assert.equal(unnamed.code, 2);
    assert.match(unnamed.stderr, /verify - reads the content from standard input: name its proof file/);
    const mixed = await cli(['stamp', '-', proofFile], { stdin: content });
    assert.equal(mixed.code, 2);
    assert.match(mixed.stderr, /stamp - takes no other inputs/);
  });
});
