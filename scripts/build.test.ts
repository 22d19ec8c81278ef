import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stopsGracefully } from '../test/graceful-stop.ts';
import { freePort, makeDataDir } from '../test/helper.ts';
import { finished, run, serving, start } from '../test/process.ts';

const root = path.join(import.meta.dirname, '..');

let work: string;
before(() => (work = makeDataDir()));
after(() => rmSync(work, { recursive: true, force: true }));

test('the packed package installs and runs: its command and its client are compiled JavaScript with types', async () => {
  // npm pack runs `prepare`, which compiles src/ into dist/.
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: root });
  assert.equal(packed.code, 0, packed.stderr);
  const [{ filename, files }] = JSON.parse(packed.stdout) as [
    { filename: string; files: { path: string }[] },
  ];
  const paths = files.map((f) => f.path);
  for (const file of [
    'dist/cli/main.js',
    'dist/client/client.js',
    'dist/client/client.d.ts',
    'dist/main.js',
    'dist/pages/assets/site.css',
  ])
    assert.ok(paths.includes(file), `${file} is packed`);
  const stray = paths.filter(
    (p) => !['package.json', 'README.md', 'LICENSE'].includes(p) && !p.startsWith('dist/'),
  );
  assert.deepEqual(stray, [], 'only dist/ and the package documents are packed');
  assert.deepEqual(
    paths.filter((p) => (p.endsWith('.ts') && !p.endsWith('.d.ts')) || p.includes('.test.')),
    [],
    'no TypeScript sources and no tests: Node refuses to strip types under node_modules',
  );

  // Installed the way a user installs it; the dependencies come from npm's cache when it holds them.
  const consumer = path.join(work, 'consumer');
  mkdirSync(consumer);
  writeFileSync(
    path.join(consumer, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  // Its scripts run: the `node` dependency sets up the Node 24 that runs the command.
  const installed = await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', path.join(work, filename)],
    { cwd: consumer },
  );
  assert.equal(installed.code, 0, installed.stderr);

  // The installed command, found on PATH as npx finds it; it serves the compiled service too. Nothing of
  // the checkout is on that PATH: the package runs on the Node 24 its own `node` dependency installed.
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const bin = path.join(consumer, 'node_modules/.bin');
  const env = {
    PATH: [
      bin,
      ...(process.env.PATH ?? '').split(path.delimiter).filter((dir) => !dir.startsWith(root)),
    ].join(path.delimiter),
    HOME: process.env.HOME ?? work,
    HASHPROOF_URL: baseUrl,
    // The checkpoints the command remembers stay in the test's directory.
    HASHPROOF_STATE_DIR: path.join(work, 'hashproof-state'),
  };
  const node = await run('node', ['-p', 'process.version + " " + process.execPath'], { cwd: consumer, env });
  assert.equal(node.code, 0, node.stderr);
  const [version, nodePath] = node.stdout.trim().split(' ') as [string, string];
  assert.match(version, /^v24\./);
  assert.ok(nodePath.startsWith(consumer), `the consumer's own Node runs the package: ${nodePath}`);
  const help = await run('hashproof', ['--help'], { cwd: consumer, env });
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^hashproof: timestamped proofs/);
  const database = `sqlite:${path.join(consumer, 'data', 'hashproof.db')}`;
  const server = start('hashproof', ['serve', '--port', String(port), '--database', database], {
    cwd: consumer,
    env,
  });
  const served = finished(server);
  try {
    const health = await serving(server, baseUrl);
    assert.equal(health.ok, true, JSON.stringify(health));
    assert.equal(health.version, JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).version);
    const asset = await fetch(`${baseUrl}/assets/site.css`);
    assert.equal(asset.status, 200, 'the pages find their assets in the compiled package');
    await asset.arrayBuffer();
    await useInstalledPackage(consumer, env, baseUrl);
    // SIGTERM to the installed command drains the service (held notarize requests answered) and exits 0.
    await stopsGracefully(server, baseUrl);
  } finally {
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  const stopped = await served;
  assert.equal(stopped.code, 0, stopped.stderr);

  // The compiled service run directly, as a process manager may: node node_modules/hashproof/dist/main.js.
  const direct = start('node', [path.join(consumer, 'node_modules/hashproof/dist/main.js')], {
    cwd: consumer,
    env: { ...env, PORT: String(port), DATABASE_URL: database },
  });
  try {
    const health = await serving(direct, baseUrl);
    assert.deepEqual(health.database, { engine: 'sqlite', ok: true });
    await stopsGracefully(direct, baseUrl);
  } finally {
    if (direct.exitCode === null) direct.kill('SIGKILL');
  }
});

async function useInstalledPackage(consumer: string, env: NodeJS.ProcessEnv, baseUrl: string) {
  const file = path.join(consumer, 'release.tar');
  writeFileSync(file, 'release bytes');
  // As a user runs it: npx finds the installed command (--no: never fetch one from the registry).
  const stamped = await run('npx', ['--no', 'hashproof', 'stamp', file, '--json'], { cwd: consumer, env });
  assert.equal(stamped.code, 0, stamped.stderr);
  const proofId = (JSON.parse(stamped.stdout) as { proof: { id: string } }).proof.id;
  // The proof file stamp wrote, checked offline and by the served instance (its HMAC, its log).
  const verified = await run('npx', ['--no', 'hashproof', 'verify', file, '--online', '--json'], {
    cwd: consumer,
    env,
  });
  assert.equal(verified.code, 0, `${verified.stdout}${verified.stderr}`);
  const report = JSON.parse(verified.stdout) as { ok: boolean; proofId: string; checks: { name: string }[] };
  assert.equal(report.ok, true);
  assert.equal(report.proofId, proofId);
  assert.ok(
    report.checks.some((check) => check.name === 'contentHash'),
    verified.stdout,
  );
  writeFileSync(file, 'other bytes');
  const tampered = await run('npx', ['--no', 'hashproof', 'verify', file, '--json'], { cwd: consumer, env });
  assert.notEqual(tampered.code, 0, 'a changed file fails its proof');
  writeFileSync(file, 'release bytes');

  // The client, imported by its package name from a module of the consumer.
  writeFileSync(
    path.join(consumer, 'use.ts'),
    `import { createClient, type Proof } from 'hashproof/client';
const client = createClient({ baseUrl: process.argv[2]! });
const proof: Proof = (await client.getProof(process.argv[3]!)).proof;
const checks = await client.verifyOffline(proof, { path: process.argv[4]! });
console.log(JSON.stringify({ id: proof.id, contentHash: checks.find((c) => c.name === 'contentHash')?.status }));
`,
  );
  const typed = await run(
    process.execPath,
    [
      path.join(root, 'node_modules/typescript/bin/tsc'),
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--target',
      'es2024',
      '--skipLibCheck',
      '--typeRoots',
      path.join(root, 'node_modules/@types'),
      '--types',
      'node',
      'use.ts',
    ],
    { cwd: consumer },
  );
  assert.equal(typed.code, 0, `the package's types check a consumer: ${typed.stdout}${typed.stderr}`);
  const used = await run('node', ['use.ts', baseUrl, proofId, file], { cwd: consumer, env });
  assert.equal(used.code, 0, used.stderr);
  assert.deepEqual(JSON.parse(used.stdout), { id: proofId, contentHash: 'valid' });
}
