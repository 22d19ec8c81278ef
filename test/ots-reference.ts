import { spawn } from 'node:child_process';
import path from 'node:path';
import type { OtsAttestation, OtsTimestamp } from '../src/core/opentimestamps.ts';
import { attestationsOf } from '../src/core/opentimestamps.ts';

/**
 * The reference OpenTimestamps library, Debian's python3-opentimestamps with python3-bitcoinlib, run
 * through test/ots-check.py by the system interpreter (a `python3` found first on PATH may lack them).
 */
const PYTHON = '/usr/bin/python3';
const SCRIPT = path.join(import.meta.dirname, 'ots-check.py');

export async function reference(
  mode: 'check' | 'reserialize' | 'write' | 'calendar',
  request: unknown,
): Promise<any> {
  const child = spawn(PYTHON, [SCRIPT, mode], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  child.stdin.end(JSON.stringify(request));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (code !== 0) throw new Error(`ots-check.py ${mode} exited ${code}: ${Buffer.concat(err).toString()}`);
  return JSON.parse(Buffer.concat(out).toString('utf8'));
}

/** An attestation as ots-check.py describes one. */
export function described(msg: Buffer, a: OtsAttestation): Record<string, unknown> {
  const base = { msg: msg.toString('hex'), kind: a.kind };
  if (a.kind === 'pending') return { ...base, uri: a.uri };
  if (a.kind === 'bitcoin') return { ...base, height: a.height };
  return { ...base, tag: a.tag.toString('hex'), payload: a.payload.toString('hex') };
}

/** Every attestation of `t` as ots-check.py lists them, in one order whatever the walk's. */
export function describedAttestations(t: OtsTimestamp): string[] {
  return sortedDescriptions(attestationsOf(t).map(({ msg, attestation }) => described(msg, attestation)));
}

export function sortedDescriptions(list: Record<string, unknown>[]): string[] {
  return list.map((entry) => JSON.stringify(entry, Object.keys(entry).sort())).sort();
}
