import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { signingMessage } from '../core/proof-signature.ts';
import { signReceipt } from '../core/receipt.ts';
import {
  existsSync,
  mkdirSync,
  openSync,
  closeSync,
  ftruncateSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { ADMIN_KEY, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import { run, type Run } from '../../test/process.ts';
import { startWebhookReceiver } from '../../test/webhook-receiver.ts';

const CLI = path.join(import.meta.dirname, 'main.ts');

let server: TestServer;
let work: string;
before(async () => {
  // Webhooks may point at the test's own receiver on loopback.
  server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, WEBHOOK_ALLOW_PRIVATE_URLS: 'true' } });
  work = makeDataDir();
});
after(async () => {
  await server.close();
  server.cleanup();
});

function cli(args: string[], options: { stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return run(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, HASHPROOF_URL: server.baseUrl, ...options.env },
    stdin: options.stdin,
  });
}

const sha256 = async (text: string) =>
  'sha256:' + (await import('node:crypto')).createHash('sha256').update(text).digest('hex');

describe('hashproof stamp', () => {
  test('a file: one proof, a .proof.json beside it, the page link printed; a re-run creates nothing new', async () => {
    const file = path.join(work, 'report.pdf');
    writeFileSync(file, 'quarterly numbers');
    const first = await cli(['stamp', file, '--metadata', 'team=finance']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      first.stdout,
      new RegExp(`^stamped ${file}  ${server.baseUrl}/proof/proof_[0-9A-Z]{26}\\n$`),
    );
    const written = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    assert.equal(written.proof.contentHash, await sha256('quarterly numbers'));
    assert.equal(written.proof.label, 'report.pdf');
    assert.deepEqual(written.proof.metadataKeys, ['team']);
    const again = await cli(['stamp', file, '--metadata', 'team=finance', '--json']);
    assert.equal(again.code, 0, again.stderr);
    const result = JSON.parse(again.stdout);
    assert.equal(result.idempotentReplay, true);
    assert.equal(result.proof.id, written.proof.id);
  });

  test('a directory, recursively, skipping proof files', async () => {
    const dir = path.join(work, 'release');
    mkdirSync(path.join(dir, 'sub'), { recursive: true });
    writeFileSync(path.join(dir, 'a.bin'), 'a');
    writeFileSync(path.join(dir, 'sub', 'b.bin'), 'b');
    const run = await cli(['stamp', dir, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const results = JSON.parse(run.stdout);
    assert.deepEqual(
      results.map((r: { file: string }) => path.relative(dir, r.file)),
      ['a.bin', 'sub/b.bin'],
    );
    const rerun = await cli(['stamp', dir, '--json']);
    assert.deepEqual(
      JSON.parse(rerun.stdout).map((r: { idempotentReplay: boolean }) => r.idempotentReplay),
      [true, true],
    );
    // Piped, many files give plain lines, one a file, and no progress.
    const plain = await cli(['stamp', dir]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stderr, '');
    const page = `${server.baseUrl.replaceAll('.', '\\.')}/proof/proof_[0-9A-Z]{26}`;
    assert.match(
      plain.stdout,
      new RegExp(
        `^already stamped ${dir}/a\\.bin  ${page}\\nalready stamped ${dir}/sub/b\\.bin  ${page}\\n$`,
      ),
    );
  });

  test('on a terminal, many files or a large one show their progress (files and bytes done); one small file none', async (t) => {
    if ((await run('sh', ['-c', 'command -v script'])).code !== 0)
      return t.skip('needs script(1) from util-linux for a pseudo-terminal');
    const dir = path.join(work, 'terminal');
    mkdirSync(dir);
    const big = path.join(dir, 'disk.img');
    const fd = openSync(big, 'w');
    ftruncateSync(fd, 65 * 2 ** 20); // sparse, over the 64 MiB that shows one file's progress
    closeSync(fd);
    // script(1) runs the command on a pseudo-terminal: standard output and error both reach it.
    // The line is redrawn after a carriage return and an erase to the end of the line (ESC [ K).
    const onTerminal = async (args: string[]) => {
      const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
      const shown = await run('script', ['-qec', command, '/dev/null'], {
        env: { PATH: process.env.PATH, HASHPROOF_URL: server.baseUrl },
      });
      assert.equal(shown.code, 0, shown.stdout);
      return shown.stdout.replaceAll('\r\x1b[K', '<redraw>');
    };
    const notes = path.join(dir, 'notes.txt');
    const readme = path.join(dir, 'readme.txt');
    writeFileSync(notes, 'terminal notes');
    writeFileSync(readme, 'terminal readme');
    const many = await onTerminal(['stamp', notes, readme]);
    assert.match(many, /^<redraw>\[\.{20}\] 0\/2 files {2}0 B\/29 B {2}hashing notes\.txt<redraw>/);
    assert.match(many, /<redraw>\[[#.]{20}\] 0\/2 files {2}14 B\/29 B {2}stamping notes\.txt<redraw>/);
    assert.match(many, /\] 1\/2 files {2}14 B\/29 B {2}done notes\.txt<redraw>/);
    assert.match(many, /\[#{20}\] 2\/2 files {2}29 B\/29 B {2}done readme\.txt<redraw>$/);
    for (const file of [notes, readme]) {
      const line = `<redraw>stamped ${file}  ${server.baseUrl}/proof/`;
      assert.ok(many.includes(line), 'each result line is printed over a cleared progress line');
    }
    const large = await onTerminal(['stamp', big]);
    assert.match(large, /\] 0\/1 files {2}0 B\/65\.0 MiB {2}hashing disk\.img<redraw>/);
    assert.match(large, /\] 1\/1 files {2}65\.0 MiB\/65\.0 MiB {2}done disk\.img<redraw>$/);
    const one = await onTerminal(['stamp', notes]);
    assert.match(one, /^already stamped \S+notes\.txt {2}http\S+\r\n$/, 'a plain line, no progress');
  });

  test('standard input', async () => {
    const run = await cli(['stamp', '-', '--label', 'piped build log', '--json'], {
      stdin: 'log line 1\nlog line 2\n',
    });
    assert.equal(run.code, 0, run.stderr);
    const result = JSON.parse(run.stdout);
    assert.equal(result.proof.contentHash, await sha256('log line 1\nlog line 2\n'));
    assert.equal(result.proof.label, 'piped build log');
  });

  test('a large file is hashed as a stream, in bounded memory', async () => {
    const file = path.join(work, 'big.img');
    const fd = openSync(file, 'w');
    ftruncateSync(fd, 512 * 2 ** 20); // 512 MiB of zeros, sparse on disk
    closeSync(fd);
    const run = await cli(['stamp', file, '--json'], { env: { HASHPROOF_REPORT_MAX_RSS: '1' } });
    assert.equal(run.code, 0, run.stderr);
    const maxRssKb = Number(/maxRSS (\d+)/.exec(run.stderr)?.[1]);
    assert.ok(maxRssKb > 0 && maxRssKb < 200 * 1024, `max RSS ${maxRssKb} kB for a 512 MiB file`);
    // sha256 of 512 MiB of zero bytes, from sha256sum
    assert.equal(
      JSON.parse(run.stdout).proof.contentHash,
      'sha256:9acca8e8c22201155389f65abbf6bc9723edc7384ead80503839f49dcc56d767',
    );
  });
});

describe('hashproof verify', () => {
  test('keys saved in the proof file are only trusted when pinned: --keys names a manifest kept apart', async () => {
    const file = path.join(work, 'pinned.bin');
    writeFileSync(file, 'pinned content');
    assert.equal((await cli(['stamp', file])).code, 0);
    const manifestFile = path.join(work, 'hashproof-keys.json');
    writeFileSync(
      manifestFile,
      await (await fetch(`${server.baseUrl}/.well-known/hashproof-keys.json`)).text(),
    );
    const statusOf = (run: { stdout: string }, name: string) =>
      (JSON.parse(run.stdout).checks as { name: string; status: string }[]).find((c) => c.name === name)
        ?.status;

    const unpinned = await cli(['verify', file, '--json']);
    assert.equal(unpinned.code, 0, unpinned.stdout + unpinned.stderr);
    assert.equal(statusOf(unpinned, 'keys'), 'unavailable');
    const pinned = await cli(['verify', file, '--keys', manifestFile, '--json']);
    assert.equal(pinned.code, 0, pinned.stdout + pinned.stderr);
    assert.equal(statusOf(pinned, 'keys'), 'valid');
    assert.equal(statusOf(pinned, 'receipt'), 'valid');
    assert.equal(statusOf(pinned, 'inclusion'), 'valid');
    assert.equal(statusOf(pinned, 'timestamp'), 'valid');

    // A forger relabels the proof and re-signs the receipt with a key of their own, listed in the file.
    const forger = generateKeyPairSync('ed25519');
    const document = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    document.proof.label = 'forged label';
    document.proof.receipt = {
      keyId: 'ed25519-forged',
      signature: signReceipt(forger.privateKey, signingMessage(document.proof)),
    };
    document.keys = [
      {
        keyId: 'ed25519-forged',
        algorithm: 'Ed25519',
        publicKey: forger.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
        validFrom: '2000-01-01T00:00:00.000Z',
        validUntil: null,
      },
    ];
    document.evidence.logVerifierKey =
      'forged.example/log+00000000+' + Buffer.alloc(33, 1).toString('base64');
    const forgedFile = path.join(work, 'forged.proof.json');
    writeFileSync(forgedFile, JSON.stringify(document));
    const trusting = await cli(['verify', file, forgedFile, '--json']);
    assert.equal(statusOf(trusting, 'receipt'), 'valid', 'the file vouches for itself without pinning');
    const checked = await cli(['verify', file, forgedFile, '--keys', manifestFile, '--json']);
    assert.equal(checked.code, 1);
    assert.equal(statusOf(checked, 'keys'), 'invalid');
    assert.match(
      JSON.parse(checked.stdout).checks.find((c: { name: string }) => c.name === 'keys').message,
      /receipt key ed25519-forged is not a pinned key.*log key/,
    );
    assert.notEqual(statusOf(checked, 'receipt'), 'valid');
    // The receipt swap alone (log and token evidence left as saved) is caught by the pinned keys too.
    const receiptOnly = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    receiptOnly.proof.receipt = document.proof.receipt;
    receiptOnly.keys = document.keys;
    delete receiptOnly.evidence.tlogProof;
    writeFileSync(forgedFile, JSON.stringify(receiptOnly));
    const swapped = await cli(['verify', file, forgedFile, '--keys', manifestFile, '--json']);
    assert.equal(swapped.code, 1);
    assert.equal(statusOf(swapped, 'keys'), 'invalid');

    const notManifest = await cli(['verify', file, '--keys', file]);
    assert.equal(notManifest.code, 2);
    assert.match(notManifest.stderr, /--keys .*not a key manifest/);
  });

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

describe('reads, administration and errors', () => {
  test('show and search', async () => {
    const file = path.join(work, 'notes.txt');
    writeFileSync(file, 'meeting notes');
    const stamped = JSON.parse((await cli(['stamp', file, '--json'])).stdout);
    const shown = await cli(['show', stamped.url, '--json']);
    assert.equal(shown.code, 0);
    assert.equal(JSON.parse(shown.stdout).id, stamped.proof.id);
    const found = await cli(['search', '--file', file]);
    assert.match(found.stdout, new RegExp(stamped.proof.id));
  });

  test('--out writes the proof document where it says; --api-key wins over HASHPROOF_API_KEY', async () => {
    const env = { SERVICE_ADMIN_KEY: ADMIN_KEY };
    const account = JSON.parse(
      (await cli(['admin', 'accounts', 'create', '--name', 'Flag Co'], { env })).stdout,
    ).account;
    const { key } = JSON.parse((await cli(['admin', 'keys', 'create', account.id], { env })).stdout);
    const file = path.join(work, 'flagged.txt');
    writeFileSync(file, 'flagged content');
    const out = path.join(work, 'elsewhere.json');
    const badKey = { HASHPROOF_API_KEY: 'hp_not_a_key_of_this_service' };
    const refused = await cli(['stamp', file, '--out', out], { env: badKey });
    assert.equal(refused.code, 1, 'the environment key is used when no flag is given');
    assert.match(refused.stderr, /\(401 unauthorized\)/);
    const stamped = await cli(['stamp', file, '--out', out, '--api-key', key, '--json'], { env: badKey });
    assert.equal(stamped.code, 0, stamped.stderr);
    const result = JSON.parse(stamped.stdout);
    assert.equal(result.proof.accountId, account.id, 'made with the key of --api-key');
    assert.equal(result.proofFile, out);
    assert.equal(JSON.parse(readFileSync(out, 'utf8')).proof.id, result.proof.id);
    assert.ok(!existsSync(`${file}.proof.json`), 'nothing beside the file');
    const verified = await cli(['verify', file, out]);
    assert.equal(verified.code, 0, verified.stdout);
    const two = await cli(['stamp', file, file, '--out', out]);
    assert.equal(two.code, 2);
    assert.match(two.stderr, /--out works with a single input/);
  });

  test('admin accounts list, and webhooks create, list and test against a real receiver', async () => {
    const env = { SERVICE_ADMIN_KEY: ADMIN_KEY };
    const admin = async (...args: string[]) => {
      const done = await cli(['admin', ...args], { env });
      assert.equal(done.code, 0, `admin ${args.join(' ')}: ${done.stderr}`);
      return { json: JSON.parse(done.stdout), stdout: done.stdout };
    };
    const { account } = (await admin('accounts', 'create', '--name', 'Hooks Co', '--owner', 'ops')).json;
    const { accounts } = (await admin('accounts', 'list')).json;
    assert.deepEqual(
      accounts.filter((a: { id: string }) => a.id === account.id),
      [account],
    );

    const receiver = await startWebhookReceiver();
    try {
      const created = (
        await admin(
          'webhooks',
          'create',
          account.id,
          '--webhook-url',
          receiver.url,
          '--events',
          'proof.created,webhook.test',
          '--name',
          'sink',
        )
      ).json;
      assert.match(created.secret, /^whsec_/);
      assert.deepEqual(created.webhook.events, ['proof.created', 'webhook.test']);
      assert.equal(created.webhook.name, 'sink');
      receiver.setSecret(created.secret);
      const listed = await admin('webhooks', 'list', account.id);
      assert.deepEqual(
        listed.json.webhooks.map((w: { webhook: { id: string } }) => w.webhook.id),
        [created.webhook.id],
      );
      assert.ok(!listed.stdout.includes(created.secret), 'the secret is shown once, at creation');

      const { delivery } = (await admin('webhooks', 'test', created.webhook.id)).json;
      assert.equal(delivery.status, 'succeeded');
      assert.equal(delivery.eventType, 'webhook.test');
      const [received] = await receiver.waitFor(1);
      assert.equal(received!.verifyError, undefined, 'signed with the secret the command printed');
      assert.equal((received!.verified as { type: string }).type, 'webhook.test');
    } finally {
      await receiver.close();
    }

    const missing = await cli(['admin', 'webhooks', 'create', account.id]);
    assert.equal(missing.code, 2, 'no SERVICE_ADMIN_KEY is a usage error');
    const noUrl = await cli(['admin', 'webhooks', 'create', account.id], { env });
    assert.equal(noUrl.code, 2);
    assert.match(noUrl.stderr, /needs --webhook-url/);
    const wrongKey = await cli(['admin', 'accounts', 'list'], { env: { SERVICE_ADMIN_KEY: 'wrong' } });
    assert.equal(wrongKey.code, 1);
    assert.match(wrongKey.stderr, /^hashproof: .*\(401 unauthorized\)\n$/);
  });

  test('admin commands create an account, a key (usable at once) and list them', async () => {
    const env = { SERVICE_ADMIN_KEY: ADMIN_KEY };
    const account = JSON.parse(
      (await cli(['admin', 'accounts', 'create', '--name', 'CLI Co'], { env })).stdout,
    ).account;
    const created = JSON.parse((await cli(['admin', 'keys', 'create', account.id], { env })).stdout);
    assert.match(created.key, /^hp_/);
    const file = path.join(work, 'keyed.txt');
    writeFileSync(file, 'keyed content');
    const stamped = await cli(['stamp', file, '--json'], { env: { HASHPROOF_API_KEY: created.key } });
    assert.equal(JSON.parse(stamped.stdout).proof.accountId, account.id);
    const listed = await cli(['admin', 'keys', 'list', account.id], { env });
    assert.ok(!listed.stdout.includes(created.key), 'listings never show the raw key');
    const revoked = await cli(['admin', 'keys', 'revoke', created.apiKey.id], { env });
    assert.equal(JSON.parse(revoked.stdout).apiKey.status, 'revoked');
    const refused = await cli(['stamp', file], { env: { HASHPROOF_API_KEY: created.key } });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /not valid \(401 unauthorized\)/);
  });

  test('usage errors exit 2, an unreachable service 3, with one line and no stack trace', async () => {
    for (const args of [
      ['nonsense'],
      ['stamp'],
      ['verify'],
      ['show', 'nothing'],
      ['stamp', '--bogus', 'x'],
    ]) {
      const run = await cli(args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /\n\s+at /);
    }
    const file = path.join(work, 'offline.txt');
    writeFileSync(file, 'x');
    const down = await cli(['stamp', file], { env: { HASHPROOF_URL: 'http://127.0.0.1:9' } });
    assert.equal(down.code, 3, down.stderr);
    assert.match(down.stderr, /^hashproof: cannot reach http:\/\/127\.0\.0\.1:9/);
    assert.doesNotMatch(down.stderr, /\n\s+at /);
    for (const command of ['stamp', 'verify', 'show', 'search', 'admin', 'serve']) {
      const help = await cli([command, '--help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /^Usage: hashproof/);
    }
  });
});
