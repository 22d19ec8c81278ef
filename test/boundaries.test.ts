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
  ['src/proofs/proofs-service.ts', "import '../cli/output.ts';", true],
  // The witness stands beside the service's features: it takes none of their insides.
  ['src/witness/witness-server.ts', "import '../proofs/proofs-service.ts';", true],
  ['src/witness/witness-key.ts', "import '../keys/key-files.ts';", true],
  ['src/witness/witness-key.ts', "import '../keys/key-directory.ts';", false],
  ['src/cli/operator/witness.ts', "import '../../witness/witness-state.ts';", true],
  ['src/cli/operator/witness.ts', "import '../../witness/witness.ts';", false],
  // Below every feature: platform/ imports only core/; db/ only core/, platform/ and its configuration.
  ['src/platform/clock.ts', "import '../proofs/proofs-store.ts';", true],
  ['src/platform/clock.ts', "import '../db/index.ts';", true],
  ['src/platform/clock.ts', "import '../config.ts';", true],
  ['src/platform/signing-thread.ts', "import '../core/hashing.ts';", false],
  ['src/db/group-commit.ts', "import '../proofs/proofs-store.ts';", true],
  ['src/db/group-commit.ts', "import '../http/auth.ts';", true],
  ['src/db/group-commit.ts', "import '../context.ts';", true],
  ['src/db/group-commit.ts', "import '../platform/worker-host.ts';", false],
  ['src/db/index.ts', "import '../config.ts';", false],
  ['src/db/migrations/0001-proofs.ts', "import '../../proofs/proofs-store.ts';", true],
  ['src/db/migrations/0001-proofs.ts', "import '../schema.ts';", false],
  // The command: client commands reach a service through the client library only; operator commands
  // use the service's public files; main.ts runs both; output.ts and help.ts serve both.
  ['src/cli/client/stamp.ts', "import '../../proofs/proofs-store.ts';", true],
  ['src/cli/client/stamp.ts', "import '../../keys/keyring.ts';", true],
  ['src/cli/client/stamp.ts', "import '../../client/log-audit.ts';", true],
  ['src/cli/client/stamp.ts', "import '../../config.ts';", true],
  ['src/cli/client/stamp.ts', "import '../operator/keys.ts';", true],
  ['src/cli/client/stamp.ts', "import '../../client/client.ts';", false],
  ['src/cli/client/stamp.ts', "import '../../verify/proof-verifier.ts';", false],
  ['src/cli/client/stamp.ts', "import '../help.ts';", false],
  ['src/cli/operator/keys.ts', "import '../../keys/key-files.ts';", true],
  ['src/cli/operator/backup.ts', "import '../../log/log-state.ts';", true],
  ['src/cli/operator/backup.ts', "import '../../context.ts';", true],
  ['src/cli/operator/backup.ts', "import '../client/stamp.ts';", true],
  ['src/cli/operator/keys.ts', "import '../../keys/key-directory.ts';", false],
  ['src/cli/operator/keys.ts', "import '../../tsa/tsa.ts';", false],
  ['src/cli/main.ts', "import '../proofs/proofs-store.ts';", true],
  ['src/cli/main.ts', "import '../client/log-audit.ts';", true],
  ['src/cli/main.ts', "import './operator/backup.ts';", false],
  ['src/cli/output.ts', "import '../keys/keyring.ts';", true],
  ['src/cli/help.ts', "import './client/monitor.ts';", true],
  // scripts/ import src/ through its public entry points, at any depth.
  ['scripts/migrate.ts', "import '../src/proofs/proofs-store.ts';", true],
  ['scripts/migrate.ts', "import '../src/context.ts';", true],
  ['scripts/bench/seed.ts', "import '../../src/proofs/proofs-store.ts';", true],
  ['scripts/bench/seed.ts', "import '../../src/db/group-commit.ts';", true],
  ['scripts/bench/seed.ts', "import '../../src/proofs/proofs-import.ts';", false],
  ['scripts/bench/seed.ts', "import '../../src/keys/keyring.ts';", false],
  ['scripts/bench/hostile/attack-bodies.ts', "import '../../../src/tsa/tsa-routes.ts';", true],
  ['scripts/bench/hostile/attack-bodies.ts', "import '../../../src/cli/main.ts';", true],
  ['scripts/bench/hostile/attack-bodies.ts', "import '../../../src/tsa/tsa.ts';", false],
];

for (const [file, line, isRefused] of cases) {
  test(`${file}: ${line} is ${isRefused ? 'refused' : 'allowed'}`, async () => {
    assert.equal(await refused(file, line), isRefused);
  });
}
