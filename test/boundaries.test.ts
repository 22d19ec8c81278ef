import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';

/**
 * The import boundaries of eslint.config.js (docs/architecture.md, "Boundaries"), checked the way the
 * linter applies them: each line is added to a real file of the folder and linted with the project's
 * configuration.
 */
const ROOT = path.join(import.meta.dirname, '..');
const eslint = new ESLint({ cwd: ROOT });

async function refused(file: string, line: string): Promise<boolean> {
  const text = readFileSync(path.join(ROOT, file), 'utf8') + `\n${line}\n`;
  const [result] = await eslint.lintText(text, { filePath: path.join(ROOT, file) });
  return (result?.messages ?? []).some((message) => message.ruleId === 'no-restricted-imports');
}

const cases: [file: string, line: string, isRefused: boolean][] = [
  ['src/core/hashing.ts', "import '../platform/clock.ts';", true],
  ['src/core/hashing.ts', "import './canonical-json.ts';", false],
  ['src/verify/proof-verifier.ts', "import '../tsa/tsa.ts';", true],
  ['src/verify/proof-verifier.ts', "import '../core/merkle.ts';", false],
  ['src/http/auth.ts', "import '../accounts/accounts-service.ts';", true],
  ['src/http/auth.ts', "import '../context.ts';", true],
  ['src/client/client.ts', "import '../proofs/proof-schemas.ts';", true],
  ['src/log/log-routes.ts', "import '../proofs/proofs-service.ts';", true],
  ['src/tsa/tsa.ts', "import '../proofs/proof-schemas.ts';", true],
  ['src/payments/x402.ts', "import '../proofs/proofs-service.ts';", true],
  ['src/proofs/proofs-service.ts', "import '../accounts/accounts-store.ts';", true],
  ['src/proofs/proofs-service.ts', "import '../log/log-store.ts';", true],
  ['src/proofs/proofs-service.ts', "import '../log/log-service.ts';", false],
  ['src/proofs/proofs-service.ts', "import '../webhooks/webhooks-service.ts';", true],
  ['src/webhooks/webhooks-service.ts', "import '../accounts/accounts-service.ts';", false],
  ['src/pages/proof-page.ts', "import '../proofs/proofs-store.ts';", true],
];

for (const [file, line, isRefused] of cases) {
  test(`${file}: ${line} is ${isRefused ? 'refused' : 'allowed'}`, async () => {
    assert.equal(await refused(file, line), isRefused);
  });
}
