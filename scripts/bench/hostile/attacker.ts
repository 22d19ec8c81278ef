/**
 * The attacker of the hostile-load benchmark, in a worker thread so that its work does not delay the
 * measuring client's timers: it rotates over `ATTACKS` from its own source address, spending its whole
 * allowance at the start of each rate-limit window.
 */
import http from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { sleep } from '../lib/service.ts';
import { attackBodies } from './attack-bodies.ts';
import { ATTACKS, type AttackContext } from './attacks.ts';
import { countStatus, type AttackerResult } from './figures.ts';
import { ATTACKER_ADDRESS, send, type Answer, type Target } from './http.ts';

/** How often the attacker asks again once its allowance is spent (each answer a cheap 429). */
const ATTACKER_POLL_MS = 20;

interface AttackerData {
  role: 'hostile-attacker';
  port: number;
  max: number;
  context: AttackContext;
}

async function attack(data: AttackerData, durationMs: number): Promise<AttackerResult> {
  const agent = new http.Agent({ keepAlive: true });
  const target: Target = { port: data.port, localAddress: ATTACKER_ADDRESS, agent };
  const routes: AttackerResult['routes'] = ATTACKS.map((entry) => ({
    route: entry.route,
    sent: 0,
    statuses: {},
    served: [],
  }));
  let next = 0;
  const fire = async (): Promise<Answer> => {
    const index = next++ % ATTACKS.length;
    const entry = ATTACKS[index];
    const stats = routes[index];
    if (entry === undefined || stats === undefined) throw new Error('no such attack');
    const answer = await send(target, entry.request(data.context, stats.sent++));
    countStatus(stats.statuses, answer);
    if (answer.status !== 429 && answer.status !== 0) stats.served.push(answer.ms);
    return answer;
  };
  const burst = (count: number) => Promise.all(Array.from({ length: count }, () => fire()));
  const until = performance.now() + durationMs;
  // The address has not been seen yet: its first window opens with this burst.
  await burst(data.max);
  while (performance.now() < until) {
    const answer = await fire();
    // Let through after 429s: a new window began with it, and the rest of its allowance goes at once.
    if (answer.status !== 429 && answer.status !== 0 && performance.now() < until) await burst(data.max - 1);
    else await sleep(ATTACKER_POLL_MS);
  }
  agent.destroy();
  return { routes };
}

if (
  !isMainThread &&
  parentPort !== null &&
  (workerData as Partial<AttackerData> | null)?.role === 'hostile-attacker'
) {
  const port = parentPort;
  attackBodies();
  port.once('message', (message: { durationMs: number }) => {
    void attack(workerData as AttackerData, message.durationMs).then((result) => port.postMessage(result));
  });
  port.postMessage('ready');
}

/** Starts the attacker's thread; `run` lets it loose for `durationMs` and resolves with what it saw. */
export async function startAttacker(
  data: Omit<AttackerData, 'role'>,
): Promise<{ run: (durationMs: number) => Promise<AttackerResult>; stop: () => Promise<number> }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { ...data, role: 'hostile-attacker' } });
  let failed: (error: Error) => void = () => {};
  worker.on('error', (error) => failed(error));
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      failed = reject;
      worker.once('message', resolve);
    });
  await next<string>();
  return {
    run: (durationMs) => {
      const result = next<AttackerResult>();
      worker.postMessage({ durationMs });
      return result;
    },
    stop: () => worker.terminate(),
  };
}
