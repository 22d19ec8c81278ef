import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * What the proxy does to one request instead of passing it on: `unavailable` answers 503 without
 * forwarding; `drop` closes the connection without forwarding (the request never reached the service);
 * `lose-answer` forwards the request, lets the service do it, then closes the connection instead of
 * answering (the case that makes a non-idempotent retry dangerous); `break-answer` forwards it and
 * closes the connection halfway through the answer's body.
 */
export type Fault = 'unavailable' | 'drop' | 'lose-answer' | 'break-answer';

export interface ProxiedRequest {
  method: string;
  path: string;
  body: string;
  fault: Fault | undefined;
}

export interface FlakyProxy {
  url: string;
  /** Every request that reached the proxy, in order. */
  requests: ProxiedRequest[];
  /** The faults for the next requests, one each, in order; later requests pass. */
  failNext(...faults: Fault[]): void;
  close(): Promise<void>;
}

/** An HTTP proxy on loopback in front of a real server, spoiling the requests it is told to. */
export async function startFlakyProxy(targetBaseUrl: string): Promise<FlakyProxy> {
  const target = new URL(targetBaseUrl);
  const requests: ProxiedRequest[] = [];
  let faults: Fault[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const fault = faults.shift();
      requests.push({ method: req.method ?? 'GET', path: req.url ?? '/', body: body.toString(), fault });
      if (fault === 'drop') return void req.socket.destroy();
      if (fault === 'unavailable') {
        res.writeHead(503, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({
            error: { code: 'service_unavailable', message: 'proxy says no', details: {} },
          }),
        );
      }
      forward(req, body, res, fault);
    });
  });

  function forward(req: IncomingMessage, body: Buffer, res: ServerResponse, fault: Fault | undefined): void {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          if (fault === 'lose-answer') return void req.socket.destroy();
          const whole = Buffer.concat(chunks);
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          if (fault !== 'break-answer') return void res.end(whole);
          res.write(whole.subarray(0, whole.length >> 1), () => req.socket.destroy());
        });
      },
    );
    upstream.on('error', () => req.socket.destroy());
    upstream.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('proxy has no address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    failNext: (...next) => (faults = next),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
