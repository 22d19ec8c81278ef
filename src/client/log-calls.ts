import { tilePath } from '../core/tlog-tiles.ts';
import { ANSWER_CAPS, HashproofError, isObject, isStringArray } from './answers.ts';
import type { Call } from './call.ts';

/** The client's reads of the transparency log: its checkpoint, consistency proofs and tiles. */
export function logCalls(call: Call) {
  return {
    /** The log's latest checkpoint, a C2SP signed note (`/log/checkpoint`). */
    checkpoint: () =>
      call<string>('GET', '/log/checkpoint', { as: 'text', maxBytes: ANSWER_CAPS.checkpoint }),
    /**
     * The largest checkpoint at least `quorum` of the service's witnesses cosigned
     * (`/api/log/cosigned-checkpoint`); the latest one (`/log/checkpoint`) when none is yet, or the
     * service has no such read. On a busy log the latest checkpoint is signed before the witnesses
     * answer, so it seldom carries their cosignatures: this is the checkpoint a quorum can count.
     */
    async witnessedCheckpoint(quorum: number): Promise<string> {
      try {
        return await call<string>('GET', `/api/log/cosigned-checkpoint?witnesses=${quorum}`, {
          as: 'text',
          maxBytes: ANSWER_CAPS.checkpoint,
        });
      } catch (error) {
        if (error instanceof HashproofError && error.status === 404)
          return call<string>('GET', '/log/checkpoint', { as: 'text', maxBytes: ANSWER_CAPS.checkpoint });
        throw error;
      }
    },
    /** The consistency proof between two tree sizes of the log (RFC 9162 §2.1.4). */
    async consistency(from: number, to: number): Promise<Buffer[]> {
      const proof = await call<{ hashes: string[] }>('GET', `/api/log/consistency?from=${from}&to=${to}`, {
        maxBytes: ANSWER_CAPS.consistencyProof,
        isValid: (answer) =>
          isObject(answer) &&
          isStringArray(answer.hashes) &&
          answer.hashes.every((hash) => /^[A-Za-z0-9+/]{43}=$/.test(hash)),
      });
      return proof.hashes.map((hash) => Buffer.from(hash, 'base64'));
    },
    /** A C2SP tile of the log: a hash tile of `level`, or an entry bundle, `width` entries wide. */
    tile: (level: number | 'entries', index: number, width: number) =>
      call<Buffer>('GET', `/log/tile/${tilePath(level, index, width)}`, {
        as: 'bytes',
        maxBytes: level === 'entries' ? ANSWER_CAPS.entryBundle : ANSWER_CAPS.hashTile,
      }),
  };
}
