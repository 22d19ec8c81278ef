/**
 * The hostile-peers phase of the hostile-load benchmark: the service anchors with a hostile
 * OpenTimestamps calendar and a hostile RFC 3161 authority (test/hostile-calendar.ts,
 * test/hostile-authority.ts), configured as its only anchors. Both behave until the seeded proofs are
 * anchored; in the phase the calendar answers every digest with the reply built for hashing cost
 * (hundreds of Keccak branches over 4 KB messages, within the size a calendar answer may have), the
 * authority drips its answers a byte a second, and a third address notarizes under its rate limit, so
 * the log grows and every anchoring pass meets both. Meanwhile the measuring client asks `/health`
 * every 50 ms and downloads the `.ots` file of a seeded proof at the pace of its reads.
 */
import http from 'node:http';
import { startHostileAuthority, type HostileAuthority } from '../../../test/hostile-authority.ts';
import { startHostileCalendar, type HostileCalendar } from '../../../test/hostile-calendar.ts';
import { sleep } from '../lib/service.ts';
import { get, type AttackRequest } from './attacks.ts';
import { send, steady, type Target } from './http.ts';
import { Recorder } from './figures.ts';

/** The address that waits for the first anchor and notarizes in the phase (its own allowance). */
export const PEERS_ADDRESS = '127.0.0.4';
/** The longest wait for the anchor of the seeded proofs. */
const ANCHOR_WAIT_MS = 5 * 60_000;

export interface Peers {
  calendar: HostileCalendar;
  authority: HostileAuthority;
  /** What the service child is configured with. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startPeers(): Promise<Peers> {
  const calendar = await startHostileCalendar('honest');
  const authority = await startHostileAuthority('ok');
  return {
    calendar,
    authority,
    env: {
      ANCHOR_TSA_URLS: authority.url,
      ANCHOR_OTS_CALENDARS: calendar.url,
      ANCHOR_ALLOW_PRIVATE_URLS: 'true',
      ANCHOR_INTERVAL_MS: '1000',
    },
    close: async () => {
      await Promise.all([calendar.close(), authority.close()]);
    },
  };
}

/** Waits until the `.ots` file of `id` is served: the seeded proofs are anchored, with the hostile reply. */
export async function waitForAnchor(port: number, id: string, windowMs: number, max: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true });
  const target: Target = { port, localAddress: PEERS_ADDRESS, agent };
  const deadline = performance.now() + ANCHOR_WAIT_MS;
  try {
    for (;;) {
      const answer = await send(target, get(`/api/proofs/${id}/proof.ots`));
      if (answer.status === 200) return;
      if (performance.now() > deadline) throw new Error(`no anchor of the seeded proofs: ${answer.status}`);
      await sleep(Math.ceil((1.1 * windowMs) / max));
    }
  } finally {
    agent.destroy();
  }
}

const notarize = (n: number): AttackRequest => ({
  method: 'POST',
  path: '/api/proof/notarize',
  contentType: 'application/json',
  body: Buffer.from(
    JSON.stringify({
      contentHash: `sha256:${(0xbe00_0000 + n).toString(16).padStart(64, 'f')}`,
      label: `hostile peers ${n}`,
      idempotencyKey: `hostile-peers-${process.pid}-${n}`,
    }),
  ),
});

/**
 * The phase: the authority turns to dripping, a third address notarizes once per `intervalMs`, and the
 * client asks /health every `healthMs` and downloads `.ots` files of `ids` once per `intervalMs`.
 */
export async function peersPhase(options: {
  port: number;
  client: Target;
  peers: Peers;
  ids: string[];
  durationMs: number;
  healthMs: number;
  intervalMs: number;
}) {
  const { port, client, peers, ids, durationMs, healthMs, intervalMs } = options;
  peers.authority.mode = 'drip';
  peers.calendar.mode = 'hashing-cost';
  const agent = new http.Agent({ keepAlive: true });
  const writer: Target = { port, localAddress: PEERS_ADDRESS, agent };
  const health = new Recorder();
  const ots = new Recorder();
  const notarized = new Recorder();
  const submitted = peers.calendar.requests.items.length;
  try {
    await Promise.all([
      steady(healthMs, durationMs, async () => health.add(await send(client, get('/health')))),
      steady(intervalMs, durationMs, async (i) => {
        ots.add(await send(client, get(`/api/proofs/${ids[i % ids.length] ?? ''}/proof.ots`)));
      }),
      steady(intervalMs, durationMs, async (i) => notarized.add(await send(writer, notarize(i)))),
    ]);
  } finally {
    agent.destroy();
    peers.authority.mode = 'ok';
    peers.calendar.mode = 'honest';
  }
  return {
    health: health.stats(),
    ots: ots.stats(),
    notarized: notarized.stats(),
    calendarRequests: peers.calendar.requests.items.length - submitted,
    authorityRequests: peers.authority.requests.items.length,
  };
}
