import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Changes the body of an answer to a GET of `path`; returns it unchanged to pass it on as it was. */
export type Alteration = (path: string, body: Buffer) => Buffer;

export interface AlteringProxy {
  url: string;
  /** What the proxy does to the answers from now on. */
  alter(alteration: Alteration): void;
  close(): Promise<void>;
}

/**
 * An HTTP proxy on loopback in front of a real server that forwards GET requests and may change what
 * they answer: a log that serves other tiles or checkpoints than its own, as a compromised server or a
 * man in the middle would.
 */
export async function startAlteringProxy(targetBaseUrl: string): Promise<AlteringProxy> {
  let alteration: Alteration = (_path, body) => body;
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    void (async () => {
      try {
        const upstream = await fetch(targetBaseUrl + path, {
          headers: { accept: req.headers.accept ?? '*/*' },
        });
        const body = alteration(path, Buffer.from(await upstream.arrayBuffer()));
        res.writeHead(upstream.status, {
          'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream',
        });
        res.end(body);
      } catch {
        res.writeHead(502).end();
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    alter: (next) => (alteration = next),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
