import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { cosign, generateCosignerKey } from '../core/cosignature.ts';
import { parseTlogProof } from '../core/tlog-proof.ts';
import { NotarizeBody, SearchQuery } from '../proofs/proof-schemas.ts';
import { server, withCliServer, work } from './cli-test-setup.ts';
import { startMcp, type McpSession } from './mcp-test-setup.ts';

withCliServer();

let mcp: McpSession;
const call: McpSession['call'] = (name, args) => mcp.call(name, args);
const sha256 = (text: string) => 'sha256:' + createHash('sha256').update(text).digest('hex');

describe('hashproof mcp', () => {
  before(async () => {
    mcp = await startMcp(
      { HASHPROOF_URL: server.baseUrl, HASHPROOF_STATE_DIR: path.join(work, '.hashproof-state') },
      work,
    );
  });
  after(() => mcp.client.close());

  test('lists its five tools, their inputs the API schemas, none with an output schema', async () => {
    const { tools } = await mcp.client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['stamp_file', 'stamp_hash', 'verify_file', 'get_proof', 'search_proofs'],
    );
    const byName = new Map(tools.map((t) => [t.name, t]));
    assert.deepEqual(byName.get('stamp_hash')?.inputSchema, JSON.parse(JSON.stringify(NotarizeBody)));
    assert.deepEqual(byName.get('search_proofs')?.inputSchema, JSON.parse(JSON.stringify(SearchQuery)));
    assert.deepEqual(
      byName.get('stamp_file')?.inputSchema.properties?.metadata,
      JSON.parse(JSON.stringify(NotarizeBody.properties.metadata)),
    );
    for (const tool of tools) {
      assert.equal(tool.outputSchema, undefined, tool.name);
      assert.ok((tool.description ?? '').length > 100, tool.name);
    }
  });

  test('stamp_file writes the proof file, verify_file then says verified, search_proofs finds the hash', async () => {
    const file = path.join(work, 'notes.txt');
    writeFileSync(file, 'meeting notes, 27 November');
    const stamped = await call('stamp_file', { path: 'notes.txt', metadata: { project: 'apollo' } });
    assert.equal(stamped.isError, false, JSON.stringify(stamped.answer));
    assert.equal(stamped.answer.proofFile, `${file}.proof.json`);
    assert.ok(existsSync(`${file}.proof.json`));
    const written = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    const proof = stamped.answer.proof as { id: string; contentHash: string; label: string };
    assert.equal(written.proof.id, proof.id);
    assert.equal(proof.contentHash, sha256('meeting notes, 27 November'));
    assert.equal(proof.label, 'notes.txt');
    assert.equal(stamped.answer.url, `${server.baseUrl}/proof/${proof.id}`);

    const verified = await call('verify_file', { path: file });
    assert.equal(verified.isError, false, JSON.stringify(verified.answer));
    assert.equal(verified.answer.verified, true, JSON.stringify(verified.answer.problems));
    assert.equal(verified.answer.proofId, proof.id);
    const checks = verified.answer.checks as { name: string; status: string }[];
    assert.equal(checks.find((c) => c.name === 'contentHash')?.status, 'valid');

    writeFileSync(file, 'meeting notes, edited');
    const modified = await call('verify_file', { path: file });
    assert.equal(modified.isError, false);
    assert.equal(modified.answer.verified, false);

    const found = await call('search_proofs', { contentHash: proof.contentHash });
    assert.equal(found.isError, false, JSON.stringify(found.answer));
    assert.deepEqual(
      (found.answer.proofs as { id: string }[]).map((p) => p.id),
      [proof.id],
    );

    const got = await call('get_proof', { id: proof.id });
    assert.equal(got.isError, false, JSON.stringify(got.answer));
    assert.equal((got.answer.proof as { id: string }).id, proof.id);
  });

  test('stamp_hash twice with one idempotency key answers the same proof', async () => {
    const body = { contentHash: sha256('release 4.2'), label: 'release 4.2', idempotencyKey: 'release-4.2' };
    const first = await call('stamp_hash', body);
    assert.equal(first.isError, false, JSON.stringify(first.answer));
    assert.equal(first.answer.idempotentReplay, false);
    const again = await call('stamp_hash', body);
    assert.equal(again.isError, false, JSON.stringify(again.answer));
    assert.equal(again.answer.idempotentReplay, true);
    const id = (first.answer.proof as { id: string }).id;
    assert.equal((again.answer.proof as { id: string }).id, id);
    assert.deepEqual(first.answer.links, {
      proof: `${server.baseUrl}/proof/${id}`,
      verify: `${server.baseUrl}/api/verify/proofs/${id}`,
    });
  });

  test("errors are tool errors carrying the API's error envelope and code", async () => {
    const invalid = await call('stamp_hash', {
      contentHash: 'sha256:not-a-hash',
      label: 'x',
      idempotencyKey: 'bad-hash',
    });
    assert.equal(invalid.isError, true);
    const error = (invalid.answer as { error: { code: string; message: string; details: object } }).error;
    assert.equal(error.code, 'invalid_request');
    assert.equal(typeof error.message, 'string');
    assert.equal(typeof error.details, 'object');

    const missing = await call('get_proof', { id: 'proof_00000000000000000000000000' });
    assert.equal(missing.isError, true);
    assert.equal((missing.answer as { error: { code: string } }).error.code, 'not_found');

    const noFile = await call('stamp_file', { path: 'no-such-file.txt' });
    assert.equal(noFile.isError, true);
    assert.equal((noFile.answer as { error: { code: string } }).error.code, 'invalid_request');

    // The API's schema refuses what it does not name, and so does the tool.
    const extra = await call('search_proofs', { q: 'notes', colour: 'blue' });
    assert.equal(extra.isError, true);
    assert.equal((extra.answer as { error: { code: string } }).error.code, 'invalid_request');
    // A tool that does not exist is a protocol error, as the MCP specification has it.
    await assert.rejects(mcp.client.callTool({ name: 'stamp_everything', arguments: {} }), {
      code: ErrorCode.InvalidParams,
      message: /Unknown tool: stamp_everything/,
    });
  });

  test('verify_file with witnesses counts their cosignatures on the checkpoint of the proof file', async () => {
    const [w1, w2] = [generateCosignerKey('witness.example/one'), generateCosignerKey('witness.example/two')];
    const file = path.join(work, 'witnessed.txt');
    writeFileSync(file, `witnessed ${Math.random()}`);
    const stamped = await call('stamp_file', { path: file });
    assert.equal(stamped.isError, false, JSON.stringify(stamped.answer));
    // The proof file's checkpoint as the service serves it once witness one has cosigned it.
    const document = JSON.parse(readFileSync(`${file}.proof.json`, 'utf8'));
    const tlogProof = document.evidence.tlogProof as string;
    const { checkpoint } = parseTlogProof(tlogProof);
    const text = checkpoint.slice(0, checkpoint.lastIndexOf('\n\n') + 1);
    const cosignedNote = `${checkpoint}${cosign(text, Math.floor(Date.now() / 1000), w1)}\n`;
    const copy = path.join(work, 'witnessed.cosigned.json');
    const evidence = {
      ...document.evidence,
      tlogProof: tlogProof.slice(0, -checkpoint.length) + cosignedNote,
    };
    writeFileSync(copy, JSON.stringify({ ...document, evidence }));
    const witnesses = [w1.vkey, w2.vkey];

    const one = await call('verify_file', { path: file, proofFile: copy, witnesses, witnessQuorum: 1 });
    assert.equal(one.isError, false, JSON.stringify(one.answer));
    assert.equal(one.answer.verified, true, JSON.stringify(one.answer.problems));
    const both = await call('verify_file', { path: file, proofFile: copy, witnesses });
    assert.equal(both.answer.verified, false);
    assert.match(JSON.stringify(both.answer.problems), /witnesses: .*witness\.example\/two/);
    const bad = await call('verify_file', { path: file, witnesses: ['not a key'] });
    assert.equal(bad.isError, true);
    assert.equal((bad.answer as { error: { code: string } }).error.code, 'invalid_request');
  });

  test('standard output carries JSON-RPC only; the log goes to standard error', async () => {
    // Every call above went through; one more makes sure the pipe is still in step.
    await mcp.client.ping();
    assert.deepEqual(mcp.protocolErrors, []);
    assert.match(mcp.stderr(), /hashproof mcp: serving 5 tools/);
  });
});
