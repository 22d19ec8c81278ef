import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { Arrivals, type WaitOptions } from './wait.ts';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload as the official standardwebhooks library verified it, or the reason it refused. */
  verified: unknown;
  verifyError: string | undefined;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Sets the signing secret the receiver verifies with (known only once the webhook is created). */
  setSecret(secret: string): void;
  /**
   * Answers to give, in order; after the list, 200. Status 0 never answers (a hanging receiver). An
   * answer may carry headers (a redirect's Location).
   */
  respondWith(answers: (number | ReceiverAnswer)[]): void;
  /** Resolves with every request so far once `count` have arrived. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** Resolves with every request so far once `enough` holds for them, checked at each arrival. */
  waitUntil(
    enough: (received: ReceivedWebhook[]) => boolean,
    options: WaitOptions,
  ): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export interface ReceiverAnswer {
  status: number;
  headers?: Record<string, string>;
}

/** The id of the proof a `proof.created` event carries. */
export function deliveredProofId(request: ReceivedWebhook): string | undefined {
  return (JSON.parse(request.body) as { data?: { proof?: { id?: string } } }).data?.proof?.id;
}

/** A real webhook receiver on loopback that checks every signature with the `standardwebhooks` package. */
export async function startWebhookReceiver(port = 0): Promise<WebhookReceiver> {
  const arrivals = new Arrivals<ReceivedWebhook>();
  let secret: string | undefined;
  let answers: ReceiverAnswer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified: unknown;
      let verifyError: string | undefined;
      try {
        if (secret === undefined) throw new Error('no secret set');
        verified = new Webhook(secret).verify(body, req.headers as Record<string, string>);
      } catch (error) {
        verifyError = error instanceof Error ? error.message : String(error);
      }
      arrivals.add({ headers: req.headers, body, verified, verifyError });
      const { status, headers = {} } = answers.shift() ?? { status: 200 };
      if (status === 0) return; // hang: keep the request open
      res.writeHead(status, headers);
      res.end(status < 300 ? 'ok' : 'failure from the receiver');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('receiver has no address');
  return {
    url: `http://127.0.0.1:${address.port}/hooks`,
    received: arrivals.items,
    setSecret: (value) => (secret = value),
    respondWith: (list) =>
      (answers = list.map((answer) => (typeof answer === 'number' ? { status: answer } : answer))),
    waitFor: (count, timeoutMs) =>
      arrivals.until((received) => received.length >= count, {
        what: `${count} webhook requests`,
        timeoutMs,
      }),
    waitUntil: (enough, options) => arrivals.until(enough, options),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
