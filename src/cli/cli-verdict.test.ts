import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, type KeyPairKeyObjectResult } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { ulid } from 'ulid';
import { manifestKeysOf, verifyProofFile } from '../client/client.ts';
import { signingMessage } from '../core/proof-signature.ts';
import { signReceipt } from '../core/receipt.ts';
import { parseTimestampToken, type TokenParts } from '../verify/timestamp-token.ts';
import { cli, server, withCliServer, work } from './cli-test-setup.ts';

/**
 * The verdict of `hashproof verify` (docs/verification.md, "What verified means"): exit 0 only for a
 * proof checked with keys the command trusts, never for keys a proof file carries, and never for
 * evidence that is missing.
 */
withCliServer();

let count = 0;
/** A stamped file, its proof file, and the state directory the stamp remembered the service's keys in. */
async function stamped(): Promise<{ file: string; proofFile: string; state: string }> {
  count += 1;
  const file = path.join(work, `verdict-${count}.txt`);
  writeFileSync(file, `content ${count} ${randomBytes(8).toString('hex')}`);
  const state = path.join(work, `state-${count}`);
  const result = await cli(['stamp', file], { env: { HASHPROOF_STATE_DIR: state } });
  assert.equal(result.code, 0, result.stderr);
  return { file, proofFile: `${file}.proof.json`, state };
}

async function savedManifest(): Promise<string> {
  const manifestFile = path.join(work, 'hashproof-keys.json');
  writeFileSync(
    manifestFile,
    await (await fetch(`${server.baseUrl}/.well-known/hashproof-keys.json`)).text(),
  );
  return manifestFile;
}

/** A forger's receipt over the proof's fields as they stand, with the forger's key in the file if `carry`. */
function resign(document: any, forger: KeyPairKeyObjectResult, carry: boolean): void {
  document.proof.receipt = {
    keyId: 'ed25519-forged',
    signature: signReceipt(forger.privateKey, signingMessage(document.proof)),
  };
  if (carry)
    document.keys = [
      {
        keyId: 'ed25519-forged',
        algorithm: 'Ed25519',
        use: 'receipt',
        publicKey: forger.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
        validFrom: '2000-01-01T00:00:00.000Z',
        validUntil: null,
      },
    ];
}

const sha256 = (text: string) => 'sha256:' + createHash('sha256').update(text).digest('hex');

describe('hashproof verify: verified only with trusted keys and every required piece', () => {
  test('a wholly forged proof file (backdated, random HMAC, no receipt, no evidence) fails even with the real manifest pinned', async () => {
    const file = path.join(work, 'forged-contract.txt');
    writeFileSync(file, 'a contract nobody stamped');
    const timestamp = '2020-01-02T03:04:05.678Z';
    const forged = {
      proof: {
        id: `proof_${ulid(Date.parse(timestamp))}`,
        timestamp,
        contentHash: sha256('a contract nobody stamped'),
        label: 'contract',
        metadataHash: sha256('{}'),
        metadataKeys: [],
        signature: 'hmac-sha256:' + randomBytes(32).toString('hex'),
        keyId: 'hmac-0123456789abcdef',
        accountId: null,
        payment: null,
        receipt: null,
        verified: true,
      },
    };
    const proofFile = path.join(work, 'forged-contract.proof.json');
    writeFileSync(proofFile, JSON.stringify(forged));
    const manifest = await savedManifest();
    const result = await cli(['verify', file, proofFile, '--keys', manifest]);
    assert.equal(result.code, 1, result.stdout);
    assert.doesNotMatch(result.stdout, /^verified/m);
    assert.match(result.stdout, /^not verified: .*receipt: This proof has no public-key receipt/m);
    assert.match(result.stdout, /^not verified: .*timestamp: .*RFC 3161 token/m);
    assert.match(result.stdout, /^MISS receipt/m);
  });

  test('a proof re-signed with the forger’s own key, carried in the file, fails: keys in a proof file are never trusted', async () => {
    const { file, proofFile, state } = await stamped();
    const forger = generateKeyPairSync('ed25519');
    const document = JSON.parse(readFileSync(proofFile, 'utf8'));
    document.proof.label = 'forged label';
    resign(document, forger, true);
    document.evidence.logVerifierKey =
      'forged.example/log+00000000+' + Buffer.alloc(33, 1).toString('base64');
    const forgedFile = path.join(work, `forged-${count}.proof.json`);
    writeFileSync(forgedFile, JSON.stringify(document));

    const remembered = await cli(['verify', file, forgedFile, '--json'], {
      env: { HASHPROOF_STATE_DIR: state },
    });
    assert.equal(remembered.code, 1, remembered.stdout);
    const verdict = JSON.parse(remembered.stdout);
    assert.equal(verdict.verified, false);
    assert.match(verdict.trustedKeys, /^remembered for http:\/\/127\.0\.0\.1:\d+/);
    assert.notEqual(verdict.checks.find((c: { name: string }) => c.name === 'receipt').status, 'valid');
    const pinned = await cli(['verify', file, forgedFile, '--keys', await savedManifest()]);
    assert.equal(pinned.code, 1, pinned.stdout);

    // The genuine file passes with the same remembered keys.
    const genuine = await cli(['verify', file], { env: { HASHPROOF_STATE_DIR: state } });
    assert.equal(genuine.code, 0, genuine.stdout + genuine.stderr);
    assert.match(genuine.stdout, /^verified: every required check holds/m);
  });

  test('offline with no trusted keys: exit 1 and the sentence that says how to get them; --online once remembers them', async () => {
    const { file } = await stamped();
    const fresh = path.join(work, `fresh-${count}`);
    const offline = await cli(['verify', file], { env: { HASHPROOF_STATE_DIR: fresh } });
    assert.equal(offline.code, 1, offline.stdout);
    const origin = new URL(server.baseUrl).origin;
    assert.equal(
      offline.stderr.trim(),
      `not verified: no trusted keys for ${origin} (run hashproof verify --online once, or pass --keys <manifest>)`,
    );
    const online = await cli(['verify', file, '--online'], { env: { HASHPROOF_STATE_DIR: fresh } });
    assert.equal(online.code, 0, online.stdout + online.stderr);
    const again = await cli(['verify', file], { env: { HASHPROOF_STATE_DIR: fresh } });
    assert.equal(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, new RegExp(`^trusted keys: remembered for ${origin}`, 'm'));
  });

  test('a served manifest that changes or drops a remembered key is refused and never replaces it; a new key is added', async () => {
    const { file, state } = await stamped();
    const [name] = readdirSync(state).filter((entry) => entry.startsWith('keys-'));
    assert.ok(name, 'stamp remembered the service’s keys');
    const keysFile = path.join(state, name);
    const original = readFileSync(keysFile, 'utf8');
    const remembered = JSON.parse(original) as { keys: { keyId: string; use: string; publicKey: string }[] };

    const changed = structuredClone(remembered);
    const receipt = changed.keys.find((k) => k.use === 'receipt')!;
    receipt.publicKey = generateKeyPairSync('ed25519')
      .publicKey.export({ format: 'der', type: 'spki' })
      .toString('base64');
    writeFileSync(keysFile, JSON.stringify(changed));
    for (const args of [
      ['verify', file, '--online'],
      ['stamp', file],
    ]) {
      const refused = await cli(args, { env: { HASHPROOF_STATE_DIR: state } });
      assert.equal(refused.code, 1, `${args[0]}: ${refused.stdout}${refused.stderr}`);
      assert.match(refused.stderr, new RegExp(`^key manifest changed: .*${receipt.keyId}.*publicKey`, 'm'));
    }
    assert.deepEqual(JSON.parse(readFileSync(keysFile, 'utf8')), changed, 'the remembered keys are kept');

    const dropped = structuredClone(remembered);
    dropped.keys.push({ ...dropped.keys[0]!, keyId: 'ed25519-gone' });
    writeFileSync(keysFile, JSON.stringify(dropped));
    const gone = await cli(['verify', file, '--online'], { env: { HASHPROOF_STATE_DIR: state } });
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /^key manifest changed: .* no longer lists the receipt key ed25519-gone/m);

    const fewer = structuredClone(remembered);
    fewer.keys = fewer.keys.filter((k) => k.use !== 'tsa');
    writeFileSync(keysFile, JSON.stringify(fewer));
    const added = await cli(['verify', file, '--online'], { env: { HASHPROOF_STATE_DIR: state } });
    assert.equal(added.code, 0, added.stdout + added.stderr);
    assert.deepEqual(JSON.parse(readFileSync(keysFile, 'utf8')), JSON.parse(original));
  });

  test('a proof file without its RFC 3161 token, or with an altered one, is not verified', async () => {
    const { file, proofFile, state } = await stamped();
    const document = JSON.parse(readFileSync(proofFile, 'utf8'));
    const without = structuredClone(document);
    delete without.evidence.timestampToken;
    const tokenless = path.join(work, `tokenless-${count}.proof.json`);
    writeFileSync(tokenless, JSON.stringify(without));
    const result = await cli(['verify', file, tokenless], { env: { HASHPROOF_STATE_DIR: state } });
    assert.equal(result.code, 1, result.stdout);
    assert.match(result.stdout, /^MISS timestamp: No RFC 3161 token/m);
    assert.match(result.stdout, /^not verified: timestamp: /m);

    const altered = structuredClone(document);
    const token = Buffer.from(altered.evidence.timestampToken, 'base64');
    token[token.length - 10]! ^= 1;
    altered.evidence.timestampToken = token.toString('base64');
    writeFileSync(tokenless, JSON.stringify(altered));
    const flipped = await cli(['verify', file, tokenless], { env: { HASHPROOF_STATE_DIR: state } });
    assert.equal(flipped.code, 1, flipped.stdout);
    assert.match(flipped.stdout, /^FAIL timestamp: /m);
  });

  test('property: every removal or alteration of a covered field or piece of evidence, and every re-signing with an untrusted key, is not verified', async () => {
    const { proofFile } = await stamped();
    const genuine = JSON.parse(readFileSync(proofFile, 'utf8'));
    assert.ok(genuine.evidence.tlogProof, 'the proof file carries its inclusion proof');
    const trusted = manifestKeysOf(
      await (await fetch(`${server.baseUrl}/.well-known/hashproof-keys.json`)).json(),
    );
    assert.ok(Array.isArray(trusted));
    const content = { hash: genuine.proof.contentHash as string };
    assert.equal((await verifyProofFile(genuine, content, trusted)).verified, true, 'the genuine file');

    // What a signature, the token or the log's checkpoint covers, or what the verdict requires.
    const covered = [
      ['proof', 'id'],
      ['proof', 'timestamp'],
      ['proof', 'contentHash'],
      ['proof', 'label'],
      ['proof', 'metadataHash'],
      ['proof', 'receipt', 'keyId'],
      ['proof', 'receipt', 'signature'],
      ['proof', 'log', 'leafIndex'],
      ['proof', 'log', 'origin'],
      ['evidence', 'timestampToken'],
      ['evidence', 'tsaCertificates'],
      ['evidence', 'tlogProof'],
    ];
    const present = (at: string[]) => at.reduce((node: any, key) => node?.[key], genuine) != null;
    assert.ok(covered.every(present), 'stamp wrote the proof as it stands in the log, with every piece');
    // Removing these makes the proof malformed (no signing message), so they are required too.
    const required = [
      ['proof', 'signature'],
      ['proof', 'keyId'],
      ['proof', 'receipt'],
      ['evidence'],
      ['proof'],
    ];
    const parentOf = (document: any, at: string[]) =>
      at.slice(0, -1).reduce((node, key) => node[key], document);
    const alter = (value: unknown, replacement: string, position: number): unknown => {
      if (typeof value === 'number') return value + 1 + (position % 5);
      // A certificate chain is altered in what it encodes: a byte of one certificate's DER.
      if (typeof value === 'string' && value.startsWith('-----BEGIN CERTIFICATE-----')) {
        const certificates = value.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!;
        const which = position % certificates.length;
        const der = Buffer.from(certificates[which]!.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64');
        der[position % der.length]! ^= 1 + (replacement.charCodeAt(0) % 255);
        certificates[which] =
          `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----`;
        return certificates.join('\n') + '\n';
      }
      // A token is altered in what its signature covers: a byte of its DER that changes the TSTInfo,
      // the signed attributes or the signature (its certificate set and status text are not signed).
      if (typeof value === 'string' && value === genuine.evidence.timestampToken) {
        const der = Buffer.from(value, 'base64');
        const original = parseTimestampToken(der) as TokenParts;
        for (let step = 0; step < der.length; step++) {
          const changed = Buffer.from(der);
          changed[(position + step) % der.length]! ^= 1 + (replacement.charCodeAt(0) % 255);
          const parts = parseTimestampToken(changed);
          const covers = (p: TokenParts) => Buffer.concat([p.tstInfo, p.signedAttributes, p.signature]);
          if (typeof parts === 'string' || !covers(parts).equals(covers(original)))
            return changed.toString('base64');
        }
      }
      const text = String(value);
      const at = position % text.length;
      const swapped =
        text.slice(0, at) +
        (text[at] === replacement[0] ? '~' : (replacement[0] ?? '~')) +
        text.slice(at + 1);
      return swapped;
    };
    const forger = generateKeyPairSync('ed25519');
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({ kind: fc.constant('remove'), at: fc.constantFrom(...covered, ...required) }),
          fc.record({
            kind: fc.constant('alter'),
            at: fc.constantFrom(...covered),
            replacement: fc.string({ minLength: 1, maxLength: 3 }),
            position: fc.nat(),
          }),
          fc.record({
            kind: fc.constant('resign'),
            at: fc.constantFrom(...covered.filter(([part]) => part === 'proof').slice(0, 5)),
            replacement: fc.string({ minLength: 1, maxLength: 3 }),
            position: fc.nat(),
            carryKey: fc.boolean(),
          }),
        ),
        async (change: any) => {
          const document = structuredClone(genuine);
          const parent = parentOf(document, change.at);
          const key = change.at.at(-1);
          if (change.kind === 'remove') delete parent[key];
          else parent[key] = alter(parent[key], change.replacement, change.position);
          if (change.kind === 'resign') {
            // The forger signs the altered fields with a key of their own, and may carry it in the file.
            resign(document, forger, change.carryKey);
          }
          const verdict = await verifyProofFile(document, content, trusted);
          assert.equal(verdict.verified, false, JSON.stringify(change));
          assert.ok(verdict.problems.length > 0);
        },
      ),
      { numRuns: 300 },
    );
  });
});
