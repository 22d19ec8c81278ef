/**
 * Where a process's time went: the self time of a V8 CPU profile (`node --cpu-prof`) by function and by
 * file, the largest first, as a share of the profile's samples.
 *   node scripts/bench/profile-summary.ts <file.cpuprofile> [--top 30]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

const ROOT = path.resolve(import.meta.dirname, '../..');

/** A file's name as a reader knows it: relative to the repository, or to node_modules, or Node's own. */
function fileOf(url: string): string {
  if (url === '') return '(native or V8)';
  const file = url.startsWith('file://') ? new URL(url).pathname : url;
  const modules = file.lastIndexOf('node_modules/');
  if (modules >= 0) return file.slice(modules);
  return file.startsWith(ROOT) ? path.relative(ROOT, file) : file;
}

/** Self time per function (`name file:line`) and per file, each sorted largest first. */
export function summarise(profile: CpuProfile): {
  functions: SelfTime[];
  files: SelfTime[];
  totalMs: number;
} {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const functions = new Map<string, number>();
  const files = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    totalUs += us;
    const file = fileOf(frame.url);
    const name = `${frame.functionName || '(anonymous)'} ${file}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    files.set(file, (files.get(file) ?? 0) + us);
  }
  const sorted = (entries: Map<string, number>) =>
    [...entries]
      .map(([name, us]) => ({ name, ms: us / 1000, share: us / totalUs }))
      .sort((a, b) => b.ms - a.ms);
  return { functions: sorted(functions), files: sorted(files), totalMs: totalUs / 1000 };
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '30' } },
  });
  const top = Number(values.top);
  for (const file of positionals) {
    const { functions, files, totalMs } = summarise(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
    const line = (entry: SelfTime) =>
      `${(entry.share * 100).toFixed(1).padStart(5)} %  ${entry.ms.toFixed(0).padStart(6)} ms  ${entry.name}`;
    console.log(`${file}: ${totalMs.toFixed(0)} ms sampled`);
    console.log('by file:');
    for (const entry of files.slice(0, top)) console.log(line(entry));
    console.log('by function:');
    for (const entry of functions.slice(0, top)) console.log(line(entry));
  }
}
