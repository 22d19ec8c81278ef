import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { api, makeDataDir, startServer, type TestServer } from '../../test/helper.ts';
import { run } from '../../test/process.ts';
import { signingMessage, type SignedProofFields } from '../core/proof-signature.ts';
import { signReceipt } from '../core/receipt.ts';

/**
 * One table of cases, each applied alike to a stored proof and to its saved proof file: the service's
 * verification report and `hashproof verify` must reach the same verdict, and the same status for each
 * check both make from their own evidence (the receipt, the RFC 3161 token, the inclusion in the log).
 */
const CLI = path.join(import.meta.dirname, '..', 'cli', 'main.ts');

let server: TestServer;
let work: string;
let now = 0;
before(async () => {
  server = await startServer({ clock: { now: () => now } });
  now = Date.now(); // after the first keys were made
  work = makeDataDir();
});
after(async () => {
  await server.close();
  server.cleanup();
});

type Row = Record<string, string | number>;
interface ProofFile {
  proof: SignedProofFields & { signature: string; receipt: { keyId: string; signature: string } };
  evidence: { timestampToken?: string; tlogProof?: string };
}
interface Case {
  name: string;
  /** The same change to the stored row and to the file; returns the row's new values. */
  change: (file: ProofFile, other: ProofFile) => Row | Promise<Row>;
  verified: boolean;
}

const flip = (text: string, at: number) => {
  const bytes = Buffer.from(text, 'base64');
  bytes[at]! ^= 1;
  return bytes.toString('base64');
};

const cases: Case[] = [
  { name: 'untouched', change: () => ({}), verified: true },
  {
    name: 'a changed label',
    change: (file) => {
      file.proof.label += ' (edited)';
      return { label: file.proof.label };
    },
    verified: false,
  },
  {
    name: 'a flipped receipt byte',
    change: (file) => {
      file.proof.receipt.signature = 'ed25519:' + flip(file.proof.receipt.signature.slice(8), 5);
      return { receipt: file.proof.receipt.signature };
    },
    verified: false,
  },
  {
    name: 'a forged HMAC signature',
    change: (file) => {
      file.proof.signature = 'hmac-sha256:' + '0'.repeat(64);
      return { signature: file.proof.signature };
    },
    verified: false,
  },
  {
    name: 'the time-stamp token of another proof',
    change: async (file, other) => {
      file.evidence.timestampToken = other.evidence.timestampToken!;
      return { tst_signature: await storedTokenSignature(other.proof.id) };
    },
    verified: false,
  },
  {
    // Signed by a key that took over only after the proof's time (a leaked or future key).
    name: 'a receipt from a key not yet valid at the proof’s time',
    change: (file) => {
      now += 1_000;
      const key = server.ctx.keyring.rotate(new Date(now)).receipt;
      file.proof.receipt = {
        keyId: key.keyId,
        signature: signReceipt(key.privateKey, signingMessage(file.proof)),
      };
      return { receipt: file.proof.receipt.signature, receipt_key_id: key.keyId };
    },
    verified: false,
  },
];

let count = 0;
async function stamp(): Promise<{ file: string; proofFile: string; document: ProofFile }> {
  const file = path.join(work, `case-${(count += 1)}.txt`);
  writeFileSync(file, `content of case ${count}`);
  const stamped = await cli(['stamp', file]);
  assert.equal(stamped.code, 0, stamped.stderr);
  const document = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8')) as ProofFile;
  assert.ok(document.evidence.tlogProof && document.evidence.timestampToken, 'the file holds all evidence');
  return { file, proofFile: `${file}.proof.json`, document };
}

/** The TSA signature the store keeps for a proof (its token is rebuilt from it). */
async function storedTokenSignature(id: string): Promise<string> {
  const row = await server.ctx.database.db
    .selectFrom('proofs')
    .select('tst_signature')
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  return row.tst_signature ?? '';
}

function cli(args: string[]) {
  return run(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, HASHPROOF_URL: server.baseUrl },
  });
}

for (const { name, change, verified } of cases) {
  test(`the report and the command line agree: ${name}`, async () => {
    const other = (await stamp()).document;
    const { file, proofFile, document } = await stamp();
    const row = await change(document, other);
    writeFileSync(proofFile, JSON.stringify(document));
    if (Object.keys(row).length > 0)
      await server.ctx.database.db
        .updateTable('proofs')
        .set(row)
        .where('id', '=', document.proof.id)
        .execute();

    const report = (await api(server.baseUrl, `/api/verify/proofs/${document.proof.id}`)).body;
    const checked = await cli(['verify', file, proofFile, '--online', '--json']);
    const verdict = JSON.parse(checked.stdout) as { ok: boolean; checks: { name: string; status: string }[] };
    const statusOf = (check: string) => verdict.checks.find((c) => c.name === check)?.status;

    assert.equal(report.verified, verified, JSON.stringify(report.checks));
    assert.equal(verdict.ok, verified, checked.stdout);
    assert.equal(checked.code, verified ? 0 : 1);
    for (const check of ['receipt', 'timestamp', 'inclusion'])
      assert.equal(statusOf(check), report.checks[check].status, `${check}: ${checked.stdout}`);
  });
}
