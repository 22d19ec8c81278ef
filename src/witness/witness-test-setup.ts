/**
 * The witness as the tests run it: `hashproof witness` as a child process on a free loopback port, and
 * the checkpoints of a log made here (RFC 6962 trees from test/merkle-reference.ts, signed notes from
 * core/signed-note.ts), as a log submits them.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { formatCheckpoint, formatVerifierKey, signNote } from '../core/signed-note.ts';
import { leafHash } from '../core/merkle.ts';
import { consistencyProof, rootHash } from '../../test/merkle-reference.ts';
import { finished, printed, start, START_TIMEOUT_MS, type Run } from '../../test/process.ts';
import { LISTENING } from '../cli/operator/witness.ts';

const CLI = path.join(import.meta.dirname, '..', 'cli', 'main.ts');

export interface RunningWitness {
  child: ChildProcess;
  baseUrl: string;
  /** Everything it printed up to the line that it listens. */
  output: string;
  /** The verifier key it printed. */
  vkey: string;
  /** SIGTERM, then what it printed and how it ended. */
  stop(): Promise<Run>;
}

export async function startWitness(args: string[]): Promise<RunningWitness> {
  const child = start(process.execPath, [CLI, 'witness', '--listen', '127.0.0.1:0', ...args], {
    env: { PATH: process.env.PATH },
  });
  const ended = finished(child);
  let output;
  try {
    output = await printed(child, LISTENING, START_TIMEOUT_MS);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const baseUrl = new RegExp(`${LISTENING} (http://\\S+)`).exec(output)?.[1];
  // base64(0x04 ‖ key) starts with "B".
  const vkey = output.split('\n').find((line) => /^\S+\+[0-9a-f]{8}\+B\S+$/.test(line));
  if (baseUrl === undefined || vkey === undefined) {
    child.kill('SIGKILL');
    throw new Error(`unexpected start:\n${output}`);
  }
  return {
    child,
    baseUrl,
    output,
    vkey,
    stop: () => (child.kill('SIGTERM'), ended),
  };
}

export interface Answer {
  status: number;
  contentType: string | null;
  text: string;
}

export async function addCheckpoint(baseUrl: string, body: string | Buffer): Promise<Answer> {
  const response = await fetch(`${baseUrl}/add-checkpoint`, { method: 'POST', body });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    text: await response.text(),
  };
}

/** The request body of add-checkpoint. */
export const submission = (old: number, proof: readonly Uint8Array[], note: string): string =>
  [`old ${old}`, ...proof.map((hash) => Buffer.from(hash).toString('base64')), '', note].join('\n');

/** A log of its own key and leaves, whose checkpoints and proofs are made on demand. */
export class TestLog {
  readonly origin: string;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly leaves: Buffer[];

  /** `salt` makes other leaves: another tree under the same origin (a fork). */
  constructor(origin: string, size = 64, salt = '') {
    this.origin = origin;
    ({ privateKey: this.privateKey, publicKey: this.publicKey } = generateKeyPairSync('ed25519'));
    this.leaves = Array.from({ length: size }, (_, i) =>
      leafHash(Buffer.from(`${salt}${origin} entry ${i}`)),
    );
  }

  get vkey(): string {
    return formatVerifierKey(this.origin, this.publicKey);
  }

  /** The root of the first `size` leaves. */
  root(size: number): Buffer {
    return rootHash(this.leaves.slice(0, size));
  }

  text(size: number, root = this.root(size)): string {
    return formatCheckpoint({ origin: this.origin, size, rootHash: root, extensions: [] });
  }

  /** The signed checkpoint of the first `size` leaves (or of another root). */
  checkpoint(size: number, root?: Buffer): string {
    return signNote(this.text(size, root), this.origin, this.privateKey, this.publicKey);
  }

  proof(oldSize: number, size: number): Buffer[] {
    return oldSize === 0 ? [] : consistencyProof(oldSize, this.leaves.slice(0, size));
  }

  /** The whole request from `oldSize` to `size`. */
  request(oldSize: number, size: number): string {
    return submission(oldSize, this.proof(oldSize, size), this.checkpoint(size));
  }
}
