import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import { startOpensslTsa, type OpensslTsa } from '../../test/openssl-tsa.ts';
import { startCalendar, type Calendar } from '../../test/ots-calendar.ts';
import { run } from '../../test/process.ts';
import { eventually } from '../../test/wait.ts';
import { CLI } from './cli-test-setup.ts';

type Check = { name: string; status: string; message: string };

/** `hashproof verify` carries a proof's anchors in the proof file and checks each one offline. */
describe('hashproof verify and anchors', () => {
  let tsa: OpensslTsa;
  let stranger: OpensslTsa;
  let calendar: Calendar;
  let server: TestServer;
  let work: string;
  let file: string;
  let proofId: string;
  before(async () => {
    [tsa, stranger, calendar] = await Promise.all([
      startOpensslTsa(),
      startOpensslTsa('Stranger'),
      startCalendar(),
    ]);
    server = await startServer({
      env: {
        ANCHOR_TSA_URLS: tsa.url,
        ANCHOR_OTS_CALENDARS: calendar.url,
        ANCHOR_INTERVAL_MS: '100',
        ANCHOR_ALLOW_PRIVATE_URLS: 'true',
      },
    });
    work = makeDataDir();
    file = path.join(work, 'report.pdf');
    writeFileSync(file, 'the quarterly report, final');
    const stamped = await hashproof(['stamp', file, '--label', 'quarterly report']);
    assert.equal(stamped.code, 0, stamped.stderr);
    proofId = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8')).proof.id;
    await eventually(() => api(server.baseUrl, `/api/proofs/${proofId}/anchors`), {
      what: 'the anchor of the stamped proof',
      until: (res) => res.status === 200,
    });
  });
  after(async () => {
    await server.close();
    server.cleanup();
    await Promise.all([tsa.close(), stranger.close(), calendar.close()]);
  });

  const hashproof = (args: string[]) =>
    run(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env.PATH,
        HASHPROOF_URL: server.baseUrl,
        HASHPROOF_STATE_DIR: path.join(work, '.state'),
      },
    });
  const verify = async (...args: string[]) => {
    const result = await hashproof(['verify', file, '--json', ...args]);
    const report = JSON.parse(result.stdout) as { ok: boolean; checks: Check[] };
    return {
      code: result.code,
      report,
      check: (name: string) => report.checks.find((c) => c.name.startsWith(name)),
    };
  };
  const proofFile = () => JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
  const withSaved = (change: (document: any) => void) => {
    const document = proofFile();
    change(document);
    const tampered = path.join(work, `tampered-${Math.random()}.json`);
    writeFileSync(tampered, JSON.stringify(document));
    return tampered;
  };

  test('before --online the proof file has no anchors, and says how to get them', async () => {
    const { code, check } = await verify();
    assert.equal(code, 0);
    assert.equal(check('anchors')?.status, 'unavailable');
    assert.match(check('anchors')!.message, /--online/);
  });

  test('--online saves the anchors and the .ots file; offline, --tsa-roots checks the outside token', async () => {
    const online = await verify('--online');
    assert.equal(online.code, 0, JSON.stringify(online.report));
    assert.equal(proofFile().anchors.proofId, proofId);
    assert.equal(typeof proofFile().anchors.ots, 'string');
    assert.equal(online.check('anchor checkpoint')?.status, 'valid');
    assert.equal(online.check('anchor inclusion')?.status, 'valid');
    const host = new URL(tsa.url).host;
    // Without the authority's root: present, its chain not checked.
    assert.equal(online.check(`anchor rfc3161 ${host}`)?.status, 'unavailable');
    assert.match(online.check(`anchor rfc3161 ${host}`)!.message, /--tsa-roots/);
    assert.equal(online.check('anchor opentimestamps')?.status, 'unavailable');
    assert.match(online.check('anchor opentimestamps')!.message, /[Pp]ending/);

    const trusted = await verify('--tsa-roots', tsa.rootFile);
    assert.equal(trusted.code, 0);
    assert.equal(trusted.check(`anchor rfc3161 ${host}`)?.status, 'valid');
    assert.match(trusted.check(`anchor rfc3161 ${host}`)!.message, /existed by then/);

    const untrusted = await verify('--tsa-roots', stranger.rootFile);
    assert.equal(untrusted.code, 1);
    assert.equal(untrusted.check(`anchor rfc3161 ${host}`)?.status, 'invalid');
  });

  test('once Bitcoin attests the calendar, --online saves the upgraded .ots and its chain is checked', async () => {
    const block = calendar.confirm();
    await eventually(() => api(server.baseUrl, `/api/proofs/${proofId}/anchors`), {
      what: 'the Bitcoin attestation',
      until: (res) => res.body.opentimestamps?.[0]?.status === 'bitcoin',
      timeoutMs: 20_000,
    });
    const { code, check } = await verify('--online', '--tsa-roots', tsa.rootFile);
    assert.equal(code, 0);
    const bitcoin = check(`anchor opentimestamps bitcoin ${block.height}`);
    assert.equal(bitcoin?.status, 'valid');
    assert.ok(bitcoin.message.includes(block.header.subarray(36, 68).toString('hex')));
  });

  test('every tampered anchor fails offline', async () => {
    const flip = (base64: string, at: number) => {
      const bytes = Buffer.from(base64, 'base64');
      bytes[at]! ^= 1;
      return bytes.toString('base64');
    };
    const cases: [string, (d: any) => void, string][] = [
      [
        'an audit path hash',
        (d) => (d.anchors.inclusion.hashes = [flip(d.anchors.inclusion.hashes[0] ?? d.anchors.rootHash, 0)]),
        'anchor inclusion',
      ],
      ['the anchored root', (d) => (d.anchors.rootHash = flip(d.anchors.rootHash, 3)), 'anchor checkpoint'],
      [
        'the checkpoint',
        (d) =>
          (d.anchors.checkpoint = d.anchors.checkpoint.replace(
            /\n(\d+)\n/,
            (_m: string, n: string) => `\n${Number(n) + 1}\n`,
          )),
        'anchor checkpoint',
      ],
      [
        'the outside token',
        (d) => (d.anchors.rfc3161[0].token = flip(d.anchors.rfc3161[0].token, 400)),
        'anchor rfc3161',
      ],
      [
        'an operation of the .ots file',
        (d) => (d.anchors.ots = flip(d.anchors.ots, 120)),
        'anchor opentimestamps',
      ],
      [
        'anchors of another proof',
        (d) => (d.anchors.proofId = 'proof_01ARZ3NDEKTSV4RRFFQ69G5FAV'),
        'anchors',
      ],
    ];
    for (const [what, change, name] of cases) {
      const tampered = withSaved(change);
      const result = await hashproof(['verify', file, tampered, '--json', '--tsa-roots', tsa.rootFile]);
      assert.equal(result.code, 1, `${what}: ${result.stdout}`);
      const report = JSON.parse(result.stdout) as { checks: Check[] };
      assert.ok(
        report.checks.some((c) => c.name.startsWith(name) && c.status === 'invalid'),
        `${what}: ${result.stdout}`,
      );
    }
  });
});
