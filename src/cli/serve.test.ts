import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { freePort, makeDataDir } from '../../test/helper.ts';
import { stopsGracefully } from '../../test/graceful-stop.ts';
import { finished, killGroup, printed, run, serving, start } from '../../test/process.ts';
import { SERVICE_NODE_FLAGS } from '../platform/node-flags.ts';

const ROOT = path.join(import.meta.dirname, '../..');
const CLI = path.join(import.meta.dirname, 'main.ts');

let work: string;
before(() => {
  work = makeDataDir();
});

/** The command line of the one process `parent` started. */
function childCommand(parent: ChildProcess): { pid: number; command: string[] } {
  const children = readFileSync(`/proc/${parent.pid}/task/${parent.pid}/children`, 'utf8').trim().split(' ');
  assert.equal(children.length, 1, `one child: ${children.join(' ')}`);
  const pid = Number(children[0]);
  return { pid, command: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0') };
}

/** Whether a new server can listen on the port: nothing holds it any more. */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

test('npm start runs the service itself with the Node flags; SIGTERM to npm drains it and frees the port', async () => {
  const { scripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  // exec: the shell npm runs the script with becomes the service, so npm's signal reaches it.
  assert.equal(scripts.start, `exec node ${SERVICE_NODE_FLAGS.join(' ')} src/main.ts`);

  const port = await freePort();
  const npm = start('npm', ['start'], {
    cwd: ROOT,
    env: {
      PATH: `${path.join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
      HOME: process.env.HOME ?? work,
      PORT: String(port),
      DATABASE_URL: `sqlite:${path.join(work, 'npm-start', 'hashproof.db')}`,
    },
    detached: true,
  });
  const exited = finished(npm);
  try {
    await serving(npm, `http://127.0.0.1:${port}`);
    const service = childCommand(npm);
    assert.equal(path.basename(service.command[0]!), 'node', service.command.join(' '));
    for (const flag of SERVICE_NODE_FLAGS) assert.ok(service.command.includes(flag), flag);
    // npm passes the signal to the service (the shell execs it): held requests finish, npm exits 0.
    await stopsGracefully(npm, `http://127.0.0.1:${port}`);
    assert.ok(!existsSync(`/proc/${service.pid}`), 'the service is gone');
    assert.ok(await portIsFree(port), 'the service let go of its port');
  } finally {
    killGroup(npm);
  }
  const stopped = await exited;
  assert.match(stopped.stdout, /"signal":"SIGTERM".*stopping/);
});

test('serve: --port, --database and --mode set the service up over the environment; SIGTERM to its group drains it cleanly', async () => {
  const port = await freePort();
  const database = path.join(work, 'served', 'other.db');
  // The environment says otherwise: x402 without a payee would not start, so the flags must win.
  const env = {
    PATH: process.env.PATH,
    PORT: '9',
    DATABASE_URL: `sqlite:${path.join(work, 'not-this.db')}`,
    PAYMENT_MODE: 'x402',
  };
  const args = ['serve', '--port', String(port), '--database', `sqlite:${database}`, '--mode', 'demo'];
  const child = start(process.execPath, [CLI, ...args], { env, detached: true });
  const exited = finished(child);
  try {
    const health = await serving(child, `http://127.0.0.1:${port}`);
    assert.equal(health.mode, 'demo');
    assert.deepEqual(health.database, { engine: 'sqlite', ok: true });
    assert.ok(existsSync(database), `the database is created at ${database}`);
    assert.ok(existsSync(path.join(work, 'served', 'keys')), 'the keys sit beside the database');
    assert.ok(!existsSync(path.join(work, 'not-this.db')));
    // The service runs with the heap limits of `npm start` (platform/node-flags.ts).
    const { command } = childCommand(child);
    for (const flag of SERVICE_NODE_FLAGS)
      assert.ok(command.includes(flag), `${flag} in ${command.join(' ')}`);
    // SIGTERM to the command's process group (Ctrl-C, systemd) reaches the service twice, directly and
    // passed on: the drain goes on regardless, held requests finish, both exit 0.
    await stopsGracefully(child, `http://127.0.0.1:${port}`, { group: true });
  } finally {
    killGroup(child);
  }
  const stopped = await exited;
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.match(stopped.stdout, /"signal":"SIGTERM".*stopping/);
  assert.ok(await portIsFree(port));

  // --mode reaches PAYMENT_MODE: x402 without X402_PAY_TO is a configuration error (exit 2).
  const x402 = await run(process.execPath, [CLI, 'serve', '--port', String(port), '--mode', 'x402'], {
    env: { PATH: process.env.PATH, DATABASE_URL: `sqlite:${database}` },
  });
  assert.equal(x402.code, 2);
  assert.match(x402.stderr, /^hashproof: configuration: X402_PAY_TO: required when PAYMENT_MODE=x402/m);
});

test('serve passes SIGHUP on: the service reads its keys again and goes on; serve ends the way the service ended', async () => {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const child = start(process.execPath, [CLI, 'serve', '--port', String(port)], {
    env: { PATH: process.env.PATH, DATABASE_URL: `sqlite:${path.join(work, 'hangup', 'hashproof.db')}` },
    detached: true,
  });
  const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  try {
    await serving(child, baseUrl);
    const service = childCommand(child);
    const reloaded = printed(child, 'signing keys reloaded');
    child.kill('SIGHUP');
    await reloaded;
    assert.equal((await fetch(`${baseUrl}/health`)).status, 200, 'still serving');
    assert.equal(childCommand(child).pid, service.pid, 'the same service process');
    // A service that dies of a signal: the command dies of it too, leaving nothing behind.
    process.kill(service.pid, 'SIGKILL');
    const [code, signal] = await exit;
    assert.equal(signal, 'SIGKILL', `exit code ${code}`);
    assert.ok(!existsSync(`/proc/${service.pid}`), 'the service is gone');
    assert.ok(await portIsFree(port), 'the service let go of its port');
  } finally {
    killGroup(child);
  }
});
