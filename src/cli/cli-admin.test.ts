import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ADMIN_KEY } from '../../test/helper.ts';
import { startWebhookReceiver } from '../../test/webhook-receiver.ts';
import { cli, withCliServer, work } from './cli-test-setup.ts';

withCliServer();

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

  test('show takes a proof id or a URL ending in one, and names those forms for anything else (exit 2)', async () => {
    const file = path.join(work, 'shown.txt');
    writeFileSync(file, 'shown content');
    const { proof, url } = JSON.parse((await cli(['stamp', file, '--json'])).stdout);
    for (const ref of [proof.id, url, `${url}/badge.svg`, `${new URL(url).origin}/api/proofs/${proof.id}`]) {
      const shown = await cli(['show', ref, '--json']);
      assert.equal(shown.code, 0, `${ref}: ${shown.stderr}`);
      assert.equal(JSON.parse(shown.stdout).id, proof.id, ref);
    }
    // An id with more after it, a short one, or one inside other text names no proof.
    for (const ref of [
      `${proof.id}XYZ`,
      'proof_NOPE',
      proof.id.toLowerCase(),
      `see ${proof.id}`,
      `${url}/x`,
    ]) {
      const refused = await cli(['show', ref]);
      assert.equal(refused.code, 2, `${ref}: ${refused.stdout}`);
      assert.equal(
        refused.stderr,
        'hashproof: show takes a proof id (proof_ and 26 capital letters and digits, as in ' +
          "proof_01JZ8Q3W6X2Y4Z5A6B7C8D9E0F) or a proof's page, badge or API URL ending in one; " +
          `got ${JSON.stringify(ref)}\n`,
      );
    }
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
    // The account id may be given as --account, as search takes it (hashproof admin --help, docs/cli.md).
    const flagged = await cli(['admin', 'keys', 'create', '--account', account.id, '--name', 'ci'], { env });
    assert.equal(flagged.code, 0, flagged.stderr);
    const { apiKey } = JSON.parse(flagged.stdout);
    assert.equal(apiKey.name, 'ci');
    const byFlag = await cli(['admin', 'keys', 'list', '--account', account.id], { env });
    assert.deepEqual(
      JSON.parse(byFlag.stdout)
        .apiKeys.map((k: { id: string }) => k.id)
        .sort(),
      [created.apiKey.id, apiKey.id].sort(),
    );
    const twoIds = await cli(['admin', 'keys', 'list', account.id, '--account', 'acct_other'], { env });
    assert.equal(twoIds.code, 2);
    assert.match(twoIds.stderr, /two account ids/);
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
    // `hashproof help admin` is `hashproof admin --help`: the syntax of each call, --account included.
    const help = await cli(['help', 'admin']);
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stdout, (await cli(['admin', '--help'])).stdout);
    assert.match(help.stdout, /admin keys list <account-id> \| create <account-id> \[--name N\]/);
    assert.match(help.stdout, /--account <account-id>/);
  });
});
