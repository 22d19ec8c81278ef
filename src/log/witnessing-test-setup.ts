import path from 'node:path';
import { parseCosignerKey, verifyCosignature } from '../core/cosignature.ts';
import { formatVerifierKey } from '../core/signed-note.ts';
import { Keyring } from '../keys/keyring.ts';
import { api, makeDataDir, notarizeBody, startServer, type TestServer } from '../../test/helper.ts';
import { eventually } from '../../test/wait.ts';
import { startTestWitness, type TestWitness } from '../../test/tlog-witness.ts';

/** The public address of the test services: their log is `proofs.test/log`. */
export const PUBLIC_BASE_URL = 'http://proofs.test';
export const ORIGIN = 'proofs.test/log';

/** A data directory whose log key exists already, and the log's verifier key, so witnesses can trust it first. */
export function logKeyDir(dataDir = makeDataDir()): { dataDir: string; logVkey: string } {
  const keyring = Keyring.open(path.join(dataDir, 'keys'));
  return { dataDir, logVkey: formatVerifierKey(ORIGIN, keyring.logKey.publicKey) };
}

/** Starts the service with these witnesses (on loopback: private addresses allowed). */
export async function serviceWith(
  dataDir: string,
  witnesses: { vkey: string; url: string }[],
  env: Record<string, string> = {},
): Promise<TestServer> {
  return startServer({
    dataDir,
    env: {
      PUBLIC_BASE_URL,
      WITNESSES: witnesses.map((w) => `${w.vkey}@${w.url}`).join(','),
      WITNESS_ALLOW_PRIVATE_URLS: 'true',
      WITNESS_INTERVAL_MS: '10',
      SERVICE_ADMIN_KEY: 'test-admin-key-0123456789',
      ...env,
    },
  });
}

/** Notarizes one proof and waits until it is in the log; its id and leaf index. */
export async function notarized(server: TestServer, n: number): Promise<{ id: string; leafIndex: number }> {
  const created = await api(server.baseUrl, '/api/proof/notarize', {
    body: notarizeBody({ contentHash: `sha256:${n.toString(16).padStart(64, '0')}` }),
  });
  if (created.status !== 200) throw new Error(`notarize: ${created.status} ${created.text}`);
  const id = created.body.proof.id as string;
  const inclusion = await eventually(() => api(server.baseUrl, `/api/proofs/${id}/inclusion`), {
    what: 'the proof enters the log',
    until: (r) => r.status === 200,
  });
  return { id, leafIndex: inclusion.body.leafIndex as number };
}

/** The witness's cosignature line in a served note, checked against its key over the note's text. */
export function lineOf(note: string, witness: { vkey: string }): string | undefined {
  const cosigner = parseCosignerKey(witness.vkey);
  const text = note.slice(0, note.lastIndexOf('\n\n') + 1);
  const line = note
    .slice(note.lastIndexOf('\n\n') + 2, -1)
    .split('\n')
    .find((l) => l.startsWith(`— ${cosigner.name} `));
  if (line === undefined) return undefined;
  verifyCosignature(text, line, cosigner);
  return line;
}

export { startTestWitness, type TestWitness };
