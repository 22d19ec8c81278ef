import { sign as signNow, type KeyObject } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/** Signs `data` with a private key: `sha256` for ECDSA, null for Ed25519 (as `crypto.sign`). */
export type SignFn = (algorithm: 'sha256' | null, data: Buffer, key: KeyObject) => Promise<Buffer>;

/** Signs on the calling thread. */
export const signHere: SignFn = (algorithm, data, key) => Promise.resolve(signNow(algorithm, data, key));

// Inline, like the checkpointer's: a worker file would need a path that differs between sources and build.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { sign } = require('node:crypto');
const keys = new Map();
parentPort.on('message', ({ register, batch }) => {
  for (const [name, key] of register) keys.set(name, key);
  parentPort.postMessage(batch.map(([name, algorithm, data]) => {
    try {
      return sign(algorithm, data, keys.get(name));
    } catch (error) {
      return String((error && error.message) || error);
    }
  }));
});
`;

interface Pending {
  algorithm: 'sha256' | null;
  data: Buffer;
  key: KeyObject;
  name: string;
  resolve: (signature: Buffer) => void;
  reject: (error: Error) => void;
}

/**
 * The service's public-key signatures (each proof's Ed25519 receipt and ECDSA time-stamp token) made on
 * a thread of their own, so the request thread can parse and answer other requests meanwhile. Requests
 * made in one turn of the event loop go over together; each key crosses to the thread once. Should the
 * thread fail, signing goes on here.
 */
export class SigningThread {
  readonly #worker: Worker;
  readonly #names = new WeakMap<KeyObject, string>();
  #register: [string, KeyObject][] = [];
  #waiting: Pending[] = [];
  /** One entry per batch sent, in order: the thread answers batches in the order it gets them. */
  readonly #sent: Pending[][] = [];
  #failed: Error | undefined;
  #keys = 0;

  constructor() {
    // It holds keys and a few signatures at a time: a small heap keeps the process's memory down.
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 32 },
    });
    this.#worker.unref();
    this.#worker.on('message', (signatures: (Uint8Array | string)[]) => {
      const pending = this.#sent.shift() ?? [];
      pending.forEach((entry, i) => {
        const signature = signatures[i];
        if (signature instanceof Uint8Array) entry.resolve(Buffer.from(signature));
        else entry.reject(new Error(`signing failed: ${signature ?? 'no answer'}`));
      });
    });
    const fail = (error: Error) => {
      this.#failed = error;
      for (const entry of this.#sent.splice(0).flat()) entry.reject(error);
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', () => fail(new Error('the signing thread stopped')));
  }

  readonly sign: SignFn = (algorithm, data, key) => {
    if (this.#failed !== undefined) return signHere(algorithm, data, key);
    let name = this.#names.get(key);
    if (name === undefined) {
      name = `k${++this.#keys}`;
      this.#names.set(key, name);
      this.#register.push([name, key]);
    }
    if (this.#waiting.length === 0) setImmediate(() => this.#send());
    return new Promise<Buffer>((resolve, reject) =>
      this.#waiting.push({ algorithm, data, key, name: name, resolve, reject }),
    );
  };

  #send(): void {
    const waiting = this.#waiting;
    const register = this.#register;
    this.#waiting = [];
    this.#register = [];
    if (this.#failed !== undefined) {
      // The thread stopped after these were asked for: sign them here rather than leave them unanswered.
      for (const entry of waiting)
        signHere(entry.algorithm, entry.data, entry.key).then(entry.resolve, entry.reject);
      return;
    }
    this.#sent.push(waiting);
    this.#worker.postMessage({
      register,
      batch: waiting.map((entry) => [entry.name, entry.algorithm, entry.data]),
    });
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}
