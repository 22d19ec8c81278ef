import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { parseTlogProof } from '../core/tlog-proof.ts';
import { makeDataDir, notarizeBody, type TestServer } from '../../test/helper.ts';
import { run } from '../../test/process.ts';
import { startWitness, type RunningWitness } from '../witness/witness-test-setup.ts';
import { lineOf, logKeyDir, serviceWith } from './witnessing-test-setup.ts';

const CLI = path.join(import.meta.dirname, '..', 'cli', 'main.ts');

/**
 * The three parts together, as users run them: the service asks two `hashproof witness` processes to
 * cosign its checkpoints, and `hashproof stamp --witness … --witness …` waits for the quorum and writes
 * a proof file whose checkpoint carries both cosignatures, which `hashproof verify --witness` counts.
 */
describe('stamp and verify with witnesses, end to end', () => {
  const witnesses: RunningWitness[] = [];
  let server: TestServer | undefined;
  after(async () => {
    await server?.close();
    server?.cleanup();
    for (const witness of witnesses) await witness.stop();
  });

  test('a proof file cosigned by the quorum, verified offline', async () => {
    const { dataDir, logVkey } = logKeyDir();
    for (let i = 0; i < 2; i++)
      witnesses.push(
        await startWitness(['--keys-dir', makeDataDir(), '--state-dir', makeDataDir(), '--log', logVkey]),
      );
    server = await serviceWith(
      dataDir,
      witnesses.map((w) => ({ vkey: w.vkey, url: w.baseUrl })),
    );
    const work = makeDataDir();
    const file = path.join(work, 'release.tar');
    writeFileSync(file, `release ${Math.random()}`);
    const keys = witnesses.flatMap((w) => ['--witness', w.vkey]);
    const env = {
      PATH: process.env.PATH,
      HASHPROOF_URL: server.baseUrl,
      HASHPROOF_STATE_DIR: path.join(work, '.hashproof-state'),
    };
    const stamped = await run(process.execPath, [CLI, 'stamp', file, ...keys], { env });
    assert.equal(stamped.code, 0, stamped.stdout + stamped.stderr);
    const document = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    const { checkpoint } = parseTlogProof(document.evidence.tlogProof);
    for (const w of witnesses) assert.ok(lineOf(checkpoint, w) !== undefined, checkpoint);

    const verified = await run(process.execPath, [CLI, 'verify', file, ...keys], { env });
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /^ok {3}witnesses: 2 of 2 witnesses cosigned the checkpoint of size \d+/m);
  });

  test('on a busy log, whose latest checkpoint is signed before the witnesses answer', async () => {
    // The witnesses are asked every 2 s, while the log signs a checkpoint as proofs arrive: its latest
    // checkpoint is almost never the one they cosigned.
    const { dataDir, logVkey } = logKeyDir();
    const pair: RunningWitness[] = [];
    for (let i = 0; i < 2; i++)
      pair.push(
        await startWitness(['--keys-dir', makeDataDir(), '--state-dir', makeDataDir(), '--log', logVkey]),
      );
    witnesses.push(...pair);
    const busyServer = await serviceWith(
      dataDir,
      pair.map((w) => ({ vkey: w.vkey, url: w.baseUrl })),
      { WITNESS_INTERVAL_MS: '2000' },
    );
    const base = busyServer.baseUrl;
    // Proofs keep arriving while the command waits: the log signs a new checkpoint each second.
    let busy = true;
    let made = 0;
    const load = (async () => {
      while (busy) {
        const res = await fetch(`${base}/api/proof/notarize`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(notarizeBody()),
        });
        if (res.status === 200) made++;
        await res.arrayBuffer();
      }
    })();
    try {
      const work = makeDataDir();
      const file = path.join(work, 'busy.tar');
      writeFileSync(file, `busy ${Math.random()}`);
      const keys = pair.flatMap((w) => ['--witness', w.vkey]);
      const env = {
        PATH: process.env.PATH,
        HASHPROOF_URL: base,
        HASHPROOF_STATE_DIR: path.join(work, 'state'),
      };
      const stamped = await run(process.execPath, [CLI, 'stamp', file, ...keys, '--witness-wait', '120'], {
        env,
      });
      assert.equal(stamped.code, 0, stamped.stdout + stamped.stderr);
      const { checkpoint } = parseTlogProof(
        JSON.parse(readFileSync(`${file}.proof.json`, 'utf8')).evidence.tlogProof,
      );
      for (const w of pair) assert.ok(lineOf(checkpoint, w) !== undefined, checkpoint);
    } finally {
      busy = false;
      await load;
      await busyServer.close();
      busyServer.cleanup();
    }
    assert.ok(made > 0, 'the log was busy while the command waited');
  });
});
