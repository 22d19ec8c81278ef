import type { KeyObject } from 'node:crypto';
import { signHere, type SignFn } from '../core/signing.ts';
import { attachToWorkerHost, type HostClient } from './worker-host.ts';

/** Key names on the thread, unique in the process (several signers may share the thread). */
let keyNames = 0;

interface Pending {
  algorithm: 'sha256' | null;
  data: Uint8Array;
  key: KeyObject;
  name: string;
  resolve: (signature: Buffer) => void;
  reject: (error: Error) => void;
}

/**
 * The service's public-key signatures (each proof's Ed25519 receipt and ECDSA time-stamp token) made on
 * the process's background thread (`worker-host.ts`), so the request thread can parse and
 * answer other requests meanwhile. Requests made in one turn of the event loop go over together, and
 * while a batch is on the thread the next one gathers; each key crosses to the thread once. Should the thread fail, signing goes on here.
 */
export class SigningThread {
  readonly #thread: HostClient;
  readonly #names = new WeakMap<KeyObject, string>();
  readonly #registered: string[] = [];
  #register: [string, KeyObject][] = [];
  #waiting: Pending[] = [];
  /** One entry per batch sent, in order: the thread answers batches in the order it gets them. */
  readonly #sent: Pending[][] = [];
  #failed: Error | undefined;

  constructor() {
    const fail = (error: Error) => {
      this.#failed = error;
      for (const entry of this.#sent.splice(0).flat()) entry.reject(error);
      this.#send(); // those held back meanwhile are signed here
    };
    this.#thread = attachToWorkerHost((message) => {
      const signatures = message.signatures as (Uint8Array | string)[];
      const pending = this.#sent.shift() ?? [];
      pending.forEach((entry, i) => {
        const signature = signatures[i];
        if (signature instanceof Uint8Array) entry.resolve(Buffer.from(signature));
        else entry.reject(new Error(`signing failed: ${signature ?? 'no answer'}`));
      });
      this.#send(); // what was asked for while the thread signed goes over now, together
    }, fail);
  }

  /** The id of the thread that signs (shared with the other background work). */
  get threadId(): number {
    return this.#thread.threadId;
  }

  readonly sign: SignFn = (algorithm, data, key) => {
    if (this.#failed !== undefined) return signHere(algorithm, data, key);
    let name = this.#names.get(key);
    if (name === undefined) {
      name = `k${++keyNames}`;
      this.#names.set(key, name);
      this.#registered.push(name);
      this.#register.push([name, key]);
    }
    if (this.#waiting.length === 0) setImmediate(() => this.#send());
    const compact = compactCopy(data);
    return new Promise<Buffer>((resolve, reject) =>
      this.#waiting.push({ algorithm, data: compact, key, name: name, resolve, reject }),
    );
  };

  /**
   * Sends what is waiting, unless a batch is on the thread: then it goes when that one is answered,
   * with everything asked for meanwhile (while a checkpoint holds the thread, for one). Each message
   * costs the request thread 30–50 µs under load (waking the other thread), and requests asked for
   * meanwhile would wait for that batch on the thread anyway.
   */
  #send(): void {
    if (this.#waiting.length === 0) return;
    if (this.#failed === undefined && this.#sent.length > 0) return;
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
    this.#thread.post({
      role: 'sign',
      register,
      batch: waiting.map((entry) => [entry.name, entry.algorithm, entry.data]),
    });
  }

  /** Stops signing on the thread (later requests are signed here); the keys are dropped there. */
  async close(): Promise<void> {
    if (this.#failed === undefined) this.#thread.post({ role: 'forget', names: this.#registered });
    this.#failed ??= new Error('the signing thread was closed');
    for (const entry of this.#sent.splice(0).flat())
      signHere(entry.algorithm, entry.data, entry.key).then(entry.resolve, entry.reject);
    this.#send();
    this.#thread.detach();
  }
}

/**
 * The bytes of `data` in a buffer of their own. A message to a thread copies the whole memory behind a
 * view, and a small Buffer is a view on Node's shared 8 KB pool: posted as it is, each signing message
 * would carry kilobytes of unrelated bytes (40–60 µs a message instead of 6–12 µs).
 */
function compactCopy(data: Uint8Array): Uint8Array {
  return data.byteLength === data.buffer.byteLength ? data : new Uint8Array(data);
}
