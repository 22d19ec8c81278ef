import { readFileSync } from 'node:fs';
import os from 'node:os';

/** The machine a report was measured on: `cores`, the CPU model, the memory and the Node version. */
export function describeMachine(cores: number): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${cores} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/** The peak resident set of a process so far (Linux VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}
