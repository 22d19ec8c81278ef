import type { AddressInfo } from 'node:net';
import { parseVerifierKey, type NoteVerifier } from '../../core/signed-note.ts';
import { witnessKey, witnessServer, WitnessState } from '../../witness/witness.ts';
import { EXIT, print, UsageError } from '../output.ts';

/** The line the witness prints once it listens (tests wait for it). */
export const LISTENING = 'hashproof witness is listening on';

/** `host:port` or `[v6 address]:port`; port 0 takes a free one. */
function listenAddress(raw: string): { host: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(raw);
  const port = Number(match?.[3]);
  if (!match || port > 65_535)
    throw new UsageError(`--listen takes host:port, as in 127.0.0.1:8090; got ${JSON.stringify(raw)}`);
  return { host: match[1] ?? match[2] ?? '', port };
}

/** The logs of `--log` by origin (a log's key name is its checkpoints' origin); one origin may have several keys. */
function logsOf(raw: string[] | undefined): Map<string, NoteVerifier[]> {
  if (raw === undefined || raw.length === 0)
    throw new UsageError("--log takes the verifier key of a log's checkpoints (<origin>+<key id>+<key>)");
  const logs = new Map<string, NoteVerifier[]>();
  for (const vkey of raw) {
    let verifier;
    try {
      verifier = parseVerifierKey(vkey.trim());
    } catch (error) {
      throw new UsageError(`--log ${JSON.stringify(vkey)}: ${(error as Error).message}`);
    }
    logs.set(verifier.name, [...(logs.get(verifier.name) ?? []), verifier]);
  }
  return logs;
}

/**
 * `hashproof witness`: a C2SP tlog-witness for the logs named by --log. Its key is made on the first
 * start in --keys-dir; its record of each log's latest cosigned checkpoint is in --state-dir. It runs
 * until SIGINT or SIGTERM, then finishes the requests under way.
 */
export async function witness(values: {
  'keys-dir'?: string;
  'state-dir'?: string;
  log?: string[];
  listen?: string;
  name?: string;
}): Promise<number> {
  const keysDir = values['keys-dir'];
  const stateDir = values['state-dir'];
  if (!keysDir) throw new UsageError('--keys-dir names the directory of the witness key');
  if (!stateDir) throw new UsageError("--state-dir names the directory of the witness's record");
  const logs = logsOf(values.log);
  // Heard from the start: a signal during the start ends the witness once it is up, not at once.
  const { promise: stopping, resolve: stop } = Promise.withResolvers<void>();
  const signals = ['SIGINT', 'SIGTERM'] as const;
  const onSignal = () => stop();
  for (const signal of signals) process.once(signal, onSignal);
  const { host, port } = listenAddress(values.listen ?? '127.0.0.1:8090');
  const { key, vkey, created } = await witnessKey(keysDir, values.name);
  print(
    created ? `made a new witness key; its verifier key (also in ${keysDir}/witness.vkey):` : 'witness key:',
  );
  print(vkey);
  const state = await WitnessState.open(stateDir, [...logs.keys()]);
  for (const origin of logs.keys()) {
    const latest = state.latest(origin);
    print(`log ${origin}: ${latest ? `cosigned up to size ${latest.size}` : 'nothing cosigned yet'}`);
  }
  const server = witnessServer({ key, logs, state, log: (line) => process.stderr.write(`${line}\n`) });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  }).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(
      `cannot listen on ${values.listen ?? '127.0.0.1:8090'}: ${error.code ?? error.message}`,
    );
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  print(`${LISTENING} http://${shown}:${address.port}`);
  await stopping;
  for (const signal of signals) process.off(signal, onSignal);
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  return EXIT.ok;
}
