import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { freePort } from './helper.ts';
import { answers, printed, start, START_TIMEOUT_MS } from './process.ts';

const node = (script: string) => start(process.execPath, ['--input-type=module', '-e', script]);

test('a process that exits before it is ready fails the wait at once, with what it wrote', async () => {
  const child = node("console.error('cannot open the database'); process.exit(3);");
  const began = performance.now();
  await assert.rejects(answers('http://127.0.0.1:9/health', child), (error: Error) => {
    assert.match(error.message, /ended \(3\)/);
    assert.match(error.message, /cannot open the database/);
    return true;
  });
  assert.ok(performance.now() - began < START_TIMEOUT_MS, 'not after the bound');
});

test('a process that listens only when told to is waited for, and so is the line it prints then', async () => {
  const port = await freePort();
  const child = node(
    `import http from 'node:http';
     process.once('SIGUSR2', () => http.createServer((_q, s) => s.end('ok'))
       .listen(${port}, '127.0.0.1', () => console.log('listening')));
     console.log('waiting for the signal');
     setInterval(() => {}, 1000);`,
  );
  try {
    const told = printed(child, 'waiting for the signal');
    const said = printed(child, 'listening', START_TIMEOUT_MS);
    const answered = answers(`http://127.0.0.1:${port}/`, child);
    await told;
    child.kill('SIGUSR2');
    await answered;
    await said;
  } finally {
    child.kill();
    await once(child, 'close');
  }
});
