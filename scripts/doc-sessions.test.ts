import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startServer } from '../test/helper.ts';
import { runSessions, serviceEnvOf } from './doc-sessions.ts';

const root = path.join(import.meta.dirname, '..');

/**
 * The documents whose shell sessions run as pasted: how many session blocks, how many samples each
 * must compare at least, and what the offline checks must print (none may print FAILED).
 */
const DOCUMENTS = [
  {
    file: 'README.md',
    sessions: 9,
    samples: 4,
    printed: ['Hash: OK', 'Signature Verified Successfully', 'Verification: OK'],
  },
  { file: 'docs/api.md', sessions: 5, samples: 4, printed: [] },
  {
    file: 'docs/verification.md',
    sessions: 16,
    samples: 0,
    printed: [
      'ok   witnesses: 1 of 1 witnesses cosigned',
      'ok   inclusion: Leaf',
      'Hash: OK',
      'Signature Verified Successfully',
      'Verification: OK',
      'Inclusion: OK',
      'Aggregation: OK',
      'ok   aggregation: ',
      'true\ntrue\ntrue',
    ],
  },
];

describe('the documentation runs as pasted', () => {
  for (const { file, sessions, samples, printed } of DOCUMENTS) {
    test(`${file}: every session block succeeds, every answer has the shape of its sample, every check passes`, async (t) => {
      const markdown = readFileSync(path.join(root, file), 'utf8');
      const server = await startServer({ env: serviceEnvOf(markdown) });
      t.after(async () => {
        await server.close();
        server.cleanup();
      });
      const report = await runSessions(markdown, server.baseUrl);
      assert.deepEqual(report.mismatches, [], `${file} differs from what the service answers`);
      assert.equal(report.steps.length, sessions, 'every session block ran');
      assert.ok(report.steps.every((step) => step.ok));
      const answered = markdown.match(/^```json answer$/gm)?.length ?? 0;
      assert.ok(answered >= samples, `${file} shows ${answered} samples`);
      const output = report.steps.map((step) => step.output).join('\n');
      for (const line of printed) assert.ok(output.includes(line), `${file} prints ${line}`);
      assert.doesNotMatch(output, /FAILED|Failure/);
    });
  }
});

describe('the comparison of answers with samples', () => {
  const fence = (kind: string, body: string) => '```' + kind + '\n' + body + '\n```\n';
  const health = fence('sh session', 'curl -s http://127.0.0.1:8080/health');

  test('a missing or extra key, another type, a failing command: each is told, with where', async (t) => {
    const server = await startServer();
    t.after(async () => {
      await server.close();
      server.cleanup();
    });
    const answer = (await (await fetch(`${server.baseUrl}/health`)).json()) as Record<string, unknown>;
    const drifted: Record<string, unknown> = { ...answer, retired: 'a field the service no longer sends' };
    delete drifted.ok;
    drifted.version = 2;
    const markdown =
      health +
      fence('json answer', JSON.stringify(drifted)) +
      fence('sh session', 'ID=$(printf x)') +
      fence('sh session', 'curl -s http://127.0.0.1:8080/health | jq -e ".ok == false"') +
      fence('sh session', 'echo "never reached: $ID"');
    const report = await runSessions(markdown, server.baseUrl);
    assert.deepEqual(report.mismatches, [
      'line 2: /retired is in the sample, not in the answer',
      'line 2: /ok is in the answer, not in the sample',
      'line 2: /version is string in the answer, number in the sample',
      'line 11: exits with an error (output: false)',
      'line 14: exits with an error (output: none)',
    ]);
    assert.deepEqual(
      report.steps.map((step) => step.ok),
      [true, true, false, false],
    );
  });

  test('elisions: a string with … stands for any string, a key … for any other keys; --write keeps them', async (t) => {
    const server = await startServer();
    t.after(async () => {
      await server.close();
      server.cleanup();
    });
    const sample = JSON.stringify({ ok: true, version: '…', '…': 'the rest' }, null, 2) + '\n';
    const markdown = health + fence('json answer', sample.trimEnd());
    const report = await runSessions(markdown, server.baseUrl);
    assert.deepEqual(report.mismatches, []);
    assert.equal(report.written, markdown, 'an elided sample is written back unchanged');

    const open = health + fence('json answer', '{ "ok": false, "version": "0.0.0" }');
    const rewritten = (await runSessions(open, server.baseUrl)).written;
    const written = JSON.parse(/```json answer\n([\s\S]*?)```/.exec(rewritten)?.[1] ?? '');
    const {
      time: _time,
      uptimeSeconds: _uptime,
      ...lasting
    } = (await (await fetch(`${server.baseUrl}/health`)).json()) as Record<string, unknown>;
    assert.deepEqual(written, { ...written, ...lasting }, 'the real answer replaces an unelided sample');
    assert.equal(written.ok, true);
  });
});
