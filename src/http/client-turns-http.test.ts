import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { startServer, type TestServer } from '../../test/helper.ts';

let server: TestServer;
/** Every connection the test opens, closed whatever happened (a held request would keep the server open). */
const opened: Socket[] = [];
before(async () => (server = await startServer({ env: { RATE_LIMIT_MAX: '100' } })));
after(async () => {
  for (const socket of opened) socket.destroy();
  await server.close();
  server.cleanup();
});

/** A connection from `address` (any 127.x address reaches the loopback interface on Linux). */
async function socketFrom(address: string): Promise<Socket> {
  const { port } = new URL(server.baseUrl);
  const socket = connect({ host: '127.0.0.1', port: Number(port), localAddress: address });
  opened.push(socket);
  await once(socket, 'connect');
  return socket;
}

/** Sends a GET and resolves with the status line once the answer's head arrives. */
async function get(address: string, path: string): Promise<{ socket: Socket; statusLine: Promise<string> }> {
  const socket = await socketFrom(address);
  let received = '';
  const statusLine = new Promise<string>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n');
      if (end >= 0) resolve(received.slice(0, end));
    });
    socket.on('error', reject);
  });
  socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`);
  return { socket, statusLine };
}

test("one client's requests are handled four at a time; other clients are served meanwhile; a closed connection frees its place", async () => {
  const busy = '127.0.7.1';
  // Four requests whose bodies never come: each holds one of the client's places from its headers on.
  const held = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const socket = await socketFrom(busy);
      socket.write(
        'POST /api/proof/notarize HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n',
      );
      return socket;
    }),
  );
  const fifth = await get(busy, '/api/proofs/recent');
  // Another client is answered at once, while the fifth request of the first one waits for a place.
  const other = await get('127.0.7.2', '/api/proofs/recent');
  assert.match(await other.statusLine, /^HTTP\/1\.1 200 /);
  const settled = await Promise.race([fifth.statusLine, Promise.resolve('still waiting')]);
  assert.equal(settled, 'still waiting');
  // Closing one held connection passes its place to the fifth request.
  held[0]?.destroy();
  assert.match(await fifth.statusLine, /^HTTP\/1\.1 200 /);
  for (const socket of held) socket.destroy();
  // Every place came back: four more requests of the same client are answered.
  const again = await Promise.all(Array.from({ length: 4 }, () => get(busy, '/api/proofs/recent')));
  for (const { statusLine } of again) assert.match(await statusLine, /^HTTP\/1\.1 200 /);
});
