import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';

/**
 * Compiles src/ into dist/ as JavaScript with .d.ts types (Node refuses to strip the types of .ts files
 * under node_modules, so an installed package must ship JavaScript), then copies the pages' static
 * assets beside their module. Run by `npm run build` and by npm's `prepare` (npm ci, npm pack).
 */
const root = path.join(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
const compiler = path.join(root, 'node_modules/typescript/bin/tsc');
if (!existsSync(compiler)) {
  // `npm ci --omit=dev` on a server: the service runs its sources (npm start), no build is needed.
  console.error('hashproof: typescript is not installed (dev dependencies omitted), dist/ not built');
  process.exit(0);
}
rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [compiler, '-p', 'tsconfig.build.json'], {
  cwd: root,
  stdio: 'inherit',
});
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
cpSync(path.join(root, 'src/pages/assets'), path.join(dist, 'pages/assets'), { recursive: true });
