import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { api, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import { startAlteringProxy } from '../../test/altering-proxy.ts';
import { startHeaderServer, type HeaderServer } from '../../test/bitcoin-headers.ts';
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
  let headers: HeaderServer;
  let server: TestServer;
  let work: string;
  let file: string;
  let proofId: string;
  before(async () => {
    [tsa, stranger, calendar, headers] = await Promise.all([
      startOpensslTsa(),
      startOpensslTsa('Stranger'),
      startCalendar(),
      startHeaderServer(),
    ]);
    server = await startServer({
      env: {
        ANCHOR_TSA_URLS: tsa.url,
        ANCHOR_OTS_CALENDARS: calendar.url,
        ANCHOR_INTERVAL_MS: '100',
        ANCHOR_ALLOW_PRIVATE_URLS: 'true',
        BITCOIN_HEADERS_URL: headers.url,
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
    await Promise.all([tsa.close(), stranger.close(), calendar.close(), headers.close()]);
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
    assert.equal(check('anchors')?.status, 'unchecked');
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
    // Without the authority's root: present, its chain not checked, and not counted.
    assert.equal(online.check(`anchor rfc3161 ${host}`)?.status, 'unchecked');
    assert.match(online.check(`anchor rfc3161 ${host}`)!.message, /--tsa-roots/);
    assert.equal(online.check('anchor opentimestamps')?.status, 'unchecked');
    assert.match(online.check('anchor opentimestamps')!.message, /[Pp]ending/);

    const trusted = await verify('--tsa-roots', tsa.rootFile);
    assert.equal(trusted.code, 0);
    assert.equal(trusted.check(`anchor rfc3161 ${host}`)?.status, 'valid');
    assert.match(trusted.check(`anchor rfc3161 ${host}`)!.message, /existed by then/);

    const untrusted = await verify('--tsa-roots', stranger.rootFile);
    assert.equal(untrusted.code, 1);
    assert.equal(untrusted.check(`anchor rfc3161 ${host}`)?.status, 'invalid');
  });

  test('once Bitcoin attests the calendar, --online saves the upgraded .ots; the claim counts only with its header checked', async () => {
    const block = calendar.confirm();
    headers.add(block.height, block.header);
    await eventually(() => api(server.baseUrl, `/api/proofs/${proofId}/anchors`), {
      what: 'the Bitcoin attestation, its header checked by the service',
      until: (res) => res.body.opentimestamps?.[0]?.status === 'bitcoin',
      timeoutMs: 20_000,
    });
    const unchecked = await verify('--online', '--tsa-roots', tsa.rootFile);
    assert.equal(unchecked.code, 0, JSON.stringify(unchecked.report));
    const claim = unchecked.check(`anchor opentimestamps bitcoin ${block.height}`);
    assert.equal(claim?.status, 'unchecked', 'a claim without its header is reported, not counted');
    assert.match(claim.message, /header not checked \(--bitcoin-headers URL\)/);

    const { code, check } = await verify('--tsa-roots', tsa.rootFile, '--bitcoin-headers', headers.url);
    assert.equal(code, 0);
    const bitcoin = check(`anchor opentimestamps bitcoin ${block.height}`);
    assert.equal(bitcoin?.status, 'valid');
    assert.ok(bitcoin.message.includes(block.header.subarray(36, 68).toString('hex')));

    // A header server that serves another block for that height: the claim fails.
    const other = Buffer.from(block.header);
    other[40]! ^= 1;
    headers.add(block.height, other);
    const lied = await verify('--bitcoin-headers', headers.url);
    assert.equal(lied.code, 1);
    assert.equal(lied.check(`anchor opentimestamps bitcoin ${block.height}`)?.status, 'invalid');
    headers.add(block.height, block.header);
    const silent = await hashproof(['verify', file, '--bitcoin-headers', 'http://127.0.0.1:9']);
    assert.equal(silent.code, 3, 'a header server that does not answer: the check could not be made');
    assert.match(silent.stderr, /could not check the Bitcoin header/);
  });

  test('--online never writes anchors that do not verify: a lying service leaves the proof file as it was', async () => {
    const proxy = await startAlteringProxy(server.baseUrl);
    try {
      const before = readFileSync(`${file}.proof.json`);
      const state = path.join(work, '.state-liar');
      const viaProxy = (args: string[]) =>
        run(process.execPath, [CLI, ...args], {
          env: { PATH: process.env.PATH, HASHPROOF_URL: proxy.url, HASHPROOF_STATE_DIR: state },
        });
      const lies: [string, (anchors: any) => void][] = [
        ['another root', (a) => (a.rootHash = Buffer.alloc(32, 7).toString('base64'))],
        ['an .ots file grown to 1.4 MB', (a) => (a.ots = Buffer.alloc(1_400_000, 0xf0).toString('base64'))],
      ];
      for (const [what, lie] of lies) {
        proxy.alter((at, body) => {
          if (!at.endsWith(`/api/proofs/${proofId}/anchors`)) return body;
          const anchors = JSON.parse(body.toString('utf8'));
          lie(anchors);
          return Buffer.from(JSON.stringify(anchors));
        });
        if (what.includes('.ots'))
          proxy.alter((at, body) =>
            at.endsWith(`/api/proofs/${proofId}/proof.ots`) ? Buffer.alloc(1_400_000, 0xf0) : body,
          );
        const result = await viaProxy(['verify', file, '--online']);
        assert.equal(result.code, 1, `${what}: ${result.stdout}${result.stderr}`);
        assert.match(result.stdout, /^not verified: .*anchors the service sent were not saved/m, what);
        assert.deepEqual(readFileSync(`${file}.proof.json`), before, `${what}: the proof file is untouched`);
      }
    } finally {
      await proxy.close();
    }
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
