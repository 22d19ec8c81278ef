import { readFile, stat } from 'node:fs/promises';
import { signingMessage } from '../core/proof-signature.ts';
import {
  HashproofError,
  hashStream,
  pinKeys,
  verifyOffline,
  type Evidence,
  type HashproofClient,
  type ManifestKey,
  type OfflineCheck,
  type Proof,
  type ProofAnchors,
  type PublicKeyEntry,
} from '../client/client.ts';
import { anchorChecks } from './anchors.ts';
import { checkLog } from './log-memory.ts';
import { EXIT, print, UsageError } from './output.ts';

/**
 * `hashproof verify <file> [proof.json]`: the checks of the one verifier on the proof file, with keys
 * pinned by --keys (a saved manifest) or --online (the service's manifest, and the service's word on
 * the HMAC signature).
 */
export async function verify(
  client: HashproofClient,
  [file, proofFile]: string[],
  values: { online?: boolean; keys?: string; json?: boolean; 'tsa-roots'?: string },
  keysOf: () => Promise<ManifestKey[]>,
): Promise<number> {
  if (file === undefined) throw new UsageError('verify needs a file, or - and a proof file');
  if (file === '-') {
    // Standard input has no name to find its proof file by: it must be named.
    if (proofFile === undefined)
      throw new UsageError(
        'verify - reads the content from standard input: name its proof file (hashproof verify - <proof.json>)',
      );
  } else if (
    !(await stat(file).then(
      (info) => info.isFile(),
      () => false,
    ))
  )
    throw new UsageError(`no such file: ${file} (verify checks a file against its proof)`);
  const path = proofFile ?? `${file}.proof.json`;
  const document = (await readProofFile(path, proofFile === undefined ? file : undefined)) as {
    proof?: Proof;
    keys?: PublicKeyEntry[];
    evidence?: Evidence;
    anchors?: ProofAnchors;
  } & Proof;
  const proof = document.proof ?? document;
  // Trusted keys: the service's manifest (--online) or a copy kept apart from the proof (--keys);
  // otherwise only the keys saved in the proof file, which a forger could have replaced along with it.
  const manifest = values.online
    ? await keysOf()
    : values.keys !== undefined
      ? readManifest(await readFile(values.keys, 'utf8'), values.keys)
      : undefined;
  // The service's log must still extend every checkpoint of it seen before (docs/cli.md).
  if (values.online && manifest !== undefined) await checkLog(client, manifest);
  let evidence = document.evidence ?? {};
  let keysCheck: OfflineCheck = {
    name: 'keys',
    status: 'unavailable',
    message:
      'Taken from the proof file itself: pin them with --keys <saved hashproof-keys.json>, or use --online',
  };
  if (manifest !== undefined) ({ evidence, check: keysCheck } = pinKeys(manifest, evidence, proof));
  const content = file === '-' ? { hash: await hashStream(process.stdin) } : { path: file };
  const checks = await verifyOffline(proof, content, manifest ?? document.keys ?? [], evidence);
  checks.push(keysCheck);
  checks.push(
    ...(await anchorChecks(client, document, proof, {
      online: values.online === true,
      proofFile: path,
      ...(values['tsa-roots'] === undefined ? {} : { tsaRoots: values['tsa-roots'] }),
      ...(evidence.logVerifierKey === undefined ? {} : { logVerifierKey: evidence.logVerifierKey }),
    })),
  );
  if (values.online) {
    try {
      // The service vouches for its stored proof; the file must be that proof, field for field.
      const report = await client.verify(proof.id);
      const stored = (await client.getProof(proof.id)).proof;
      const matches =
        report.verified &&
        stored.signature === proof.signature &&
        signingMessage(stored) === signingMessage(proof);
      checks.splice(
        checks.findIndex((c) => c.name === 'signature'),
        1,
        {
          name: 'signature',
          status: matches ? 'valid' : 'invalid',
          message: matches ? 'The service confirms the signature' : 'The service does not confirm this proof',
        },
      );
    } catch (error) {
      if (error instanceof HashproofError && error.status === 404) {
        checks.splice(
          checks.findIndex((c) => c.name === 'signature'),
          1,
          {
            name: 'signature',
            status: 'invalid',
            message: 'The service has no such proof',
          },
        );
      } else throw error;
    }
  }
  const isOk = checks.every((c) => c.status !== 'invalid');
  if (values.json) print(JSON.stringify({ ok: isOk, proofId: proof.id, checks }, null, 2));
  else
    for (const c of checks)
      print(
        `${c.status === 'valid' ? 'ok  ' : c.status === 'invalid' ? 'FAIL' : 'skip'} ${c.name}: ${c.message}`,
      );
  return isOk ? EXIT.ok : EXIT.failed;
}

export function readManifest(text: string, file: string): ManifestKey[] {
  try {
    const keys = (JSON.parse(text) as { keys?: unknown }).keys;
    if (Array.isArray(keys)) return keys as ManifestKey[];
  } catch {
    // reported below
  }
  throw new UsageError(`--keys ${file}: not a key manifest (a saved /.well-known/hashproof-keys.json)`);
}

/** The proof file's JSON; a missing or unreadable one is a usage error that names it. */
async function readProofFile(path: string, besideFile: string | undefined): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new UsageError(
      missing
        ? `no proof file ${path}${besideFile === undefined ? '' : ` (hashproof stamp ${besideFile} writes it; or name the proof file after the file)`}`
        : `cannot read the proof file ${path}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${path} is not a proof file (not JSON)`);
  }
}
