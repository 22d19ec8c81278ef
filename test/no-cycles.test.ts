import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * No two files of src/ import each other, directly or through others: each module can be read, tested
 * and moved with what it imports below it. The graph is the static imports and re-exports of relative
 * `.ts` files, type-only ones included (a cycle of types is still two files that cannot be understood
 * apart), among the code that ships: tests and their set-up modules are left out.
 */
const SRC = path.join(import.meta.dirname, '..', 'src');
const isTestCode = (file: string) => file.endsWith('.test.ts') || file.endsWith('-test-setup.ts');

/** `import … from './x.ts'`, `export … from './x.ts'` and `import './x.ts'`, each at the start of a line. */
const STATIC_IMPORT = /^[ \t]*(?:import|export)\b(?:[^;'"]*?\bfrom)?\s*['"](\.{1,2}\/[^'"]+\.ts)['"]/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => !isTestCode(file));
}

function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = new Set<string>();
    for (const [, specifier] of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      const target = path.resolve(path.dirname(file), specifier as string);
      assert.ok(existsSync(target), `${path.relative(SRC, file)} imports ${specifier}, which is missing`);
      if (target.startsWith(SRC + path.sep) && !isTestCode(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Every cycle found by one depth-first walk, each as the files around it, the first repeated last. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const DONE = 2;
  const state = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string) => {
    state.set(file, 1);
    stack.push(file);
    for (const target of graph.get(file) ?? []) {
      const seen = state.get(target);
      if (seen === undefined) visit(target);
      else if (seen !== DONE) cycles.push([...stack.slice(stack.indexOf(target)), target]);
    }
    stack.pop();
    state.set(file, DONE);
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

test('no import cycle among the files of src/', () => {
  const graph = importGraph(sourceFiles(SRC));
  const edges = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
  // The walk saw the real tree: its files and their imports, not an empty or misread graph.
  assert.ok(graph.size >= 150, `only ${graph.size} files read`);
  assert.ok(edges >= 2 * graph.size, `only ${edges} imports among ${graph.size} files`);
  const cycles = cyclesOf(graph).map((cycle) => cycle.map((file) => path.relative(SRC, file)).join(' → '));
  assert.deepEqual(cycles, []);
});

test('the walk finds a cycle, a long one and one of types', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a', 'e']],
    ['e', []],
  ]);
  assert.deepEqual(cyclesOf(graph), [['a', 'b', 'c', 'a']]);
  assert.deepEqual(
    cyclesOf(
      new Map([
        ['e', []],
        ['d', ['e']],
      ]),
    ),
    [],
  );
  const types = "import type { A } from './a.ts';\nexport {\n  b,\n} from '../b.ts';\nimport './c.ts';\n";
  assert.deepEqual(
    [...types.matchAll(STATIC_IMPORT)].map((match) => match[1]),
    ['./a.ts', '../b.ts', './c.ts'],
  );
  // A dynamic import and a comment are not static imports.
  assert.deepEqual([..."await import('./x.ts');\n * import from './y.ts'\n".matchAll(STATIC_IMPORT)], []);
});
