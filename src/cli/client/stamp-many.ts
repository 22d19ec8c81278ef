import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256Hex } from '../../core/hashing.ts';
import {
  hashFile,
  HashproofError,
  logKeyOf,
  stampMany,
  type HashproofClient,
  type ManifestKey,
  type Proof,
  type StampedProof,
  type StampManyInput,
} from '../../client/client.ts';
import { escapeControl } from '../output.ts';
import { checkLog, logMemory, olderCheckpoint } from './log-memory.ts';
import { stampProgress, type StampInput } from './progress.ts';

/** What `hashproof stamp` reports of one file (`--json`), whichever way it was stamped. */
export interface StampResult {
  file: string;
  proofFile: string | null;
  /** The proof file itself, when it was written nowhere (standard input without --out, with --json). */
  document?: unknown;
  idempotentReplay: boolean;
  proof: Proof;
  url: string;
}

export interface StampManyFilesOptions {
  label?: string;
  metadata?: Record<string, unknown>;
  json?: boolean;
  /** The service's key manifest, checked against the keys remembered for it. */
  keys: () => Promise<ManifestKey[]>;
  print: (line: string) => void;
}

/** The idempotency key of a file's proof: from its hash and label, so a re-run returns the same proof. */
export function idempotencyKeyOf(contentHash: string, label: string): string {
  return 'stamp-' + sha256Hex(`${contentHash}\n${label}`).slice(0, 40);
}

/**
 * Stamps many files through batches (docs/cli.md, "Many files"): hashes every file, passes over those
 * whose proof file is already complete (no request spent on them), and makes the others' proofs with
 * `stampMany`, writing each `<file>.proof.json` as soon as its evidence is complete. The key manifest
 * is read once, and the log checked against the remembered checkpoint once a run and at each
 * checkpoint the run reads (from the log's tiles, no request per file).
 */
export async function stampManyFiles(
  client: HashproofClient,
  files: string[],
  inputs: StampInput[],
  options: StampManyFilesOptions,
): Promise<StampResult[]> {
  // The manifest first: a service whose keys changed is refused before anything is sent.
  const keys = await options.keys();
  const progress = stampProgress(inputs, process.stderr, options.print);
  const results: (StampResult | undefined)[] = files.map(() => undefined);
  const toStamp: { at: number; input: StampManyInput }[] = [];
  const refused: string[] = [];
  try {
    for (const [at, input] of inputs.entries()) {
      const contentHash = await hashFile(input.file, progress.hashing(input));
      progress.hashed(input);
      const label = options.label ?? path.basename(input.file);
      const done = await completeProofFile(`${input.file}.proof.json`, contentHash, label);
      if (done !== undefined) {
        results[at] = { file: input.file, proofFile: `${input.file}.proof.json`, ...done };
        progress.done(input, options.json ? undefined : resultLine(true, input.file, done.url));
        continue;
      }
      const idempotencyKey = idempotencyKeyOf(contentHash, label);
      toStamp.push({
        at,
        input: {
          contentHash,
          label,
          idempotencyKey,
          ...(options.metadata ? { metadata: options.metadata } : {}),
        },
      });
    }
    if (toStamp.length === 0) {
      // Nothing to send: the log is still checked once, as every online contact with it is.
      await checkLog(client, keys);
      return results.filter((r) => r !== undefined);
    }
    client.rateLimit.onWait = (ms) => progress.waiting(ms);
    const logKey = logKeyOf(keys);
    await stampMany(
      client,
      toStamp.map((s) => s.input),
      {
        keys,
        onSending: (indexes) => progress.stamping(inputs[toStamp[indexes[0]!]!.at]!),
        onCheckpoint: async (note, prove) => {
          if (logKey === undefined) return;
          const observation = await logMemory().observe(note, logKey, prove);
          if (observation.growth === 'older')
            process.stderr.write(`hashproof: ${escapeControl(olderCheckpoint(observation))}\n`);
        },
        onStamped: async (stamped) => {
          const input = inputs[toStamp[stamped.index]!.at]!;
          const result = await writeProofFile(client, input.file, stamped, keys);
          results[toStamp[stamped.index]!.at] = result;
          progress.done(
            input,
            options.json ? undefined : resultLine(result.idempotentReplay, input.file, result.url),
          );
        },
        onRefused: (index, error) => {
          refused.push(`${inputs[toStamp[index]!.at]!.file}: ${error.message}`);
        },
      },
    );
  } finally {
    client.rateLimit.onWait = undefined;
    progress.end();
  }
  if (refused.length > 0)
    throw new HashproofError(
      422,
      'refused',
      `the service refused ${refused.length} of ${files.length} files; the first: ${refused[0]}`,
    );
  return results.filter((r) => r !== undefined);
}

/** `stamped <file>  <page>` (or `already stamped`), with the service's text escaped. */
function resultLine(isReplay: boolean, file: string, url: string): string {
  return escapeControl(`${isReplay ? 'already stamped' : 'stamped'} ${file}  ${url}`);
}

/** Writes `<file>.proof.json`: the proof, its links, the receipt key and the offline evidence. */
async function writeProofFile(
  client: HashproofClient,
  file: string,
  stamped: StampedProof,
  keys: readonly ManifestKey[],
): Promise<StampResult> {
  const { proof, links, evidence, idempotentReplay } = stamped;
  const url = client.baseUrl + links.proof;
  const receiptKey = keys.find((k) => k.keyId === proof.receipt?.keyId);
  const document = {
    proof,
    links: { proof: url, verify: client.baseUrl + links.verify },
    service: client.baseUrl,
    keys: receiptKey ? [receiptKey] : [],
    evidence,
  };
  const proofFile = `${file}.proof.json`;
  await writeFile(proofFile, JSON.stringify(document, null, 2) + '\n');
  return { file, proofFile, idempotentReplay, proof, url };
}

/**
 * The proof of a proof file that is already complete for this file: it parses, names the file's
 * digest now and the label, and holds the RFC 3161 token and the tlog-proof. Undefined otherwise (no
 * file, another content, a file written before the proof joined the log): that file is stamped again,
 * which its idempotency key answers with the same proof.
 */
async function completeProofFile(
  proofFile: string,
  contentHash: string,
  label: string,
): Promise<{ idempotentReplay: true; proof: Proof; url: string } | undefined> {
  let document: { proof?: Partial<Proof>; links?: { proof?: unknown }; evidence?: Record<string, unknown> };
  try {
    document = JSON.parse(await readFile(proofFile, 'utf8')) as typeof document;
  } catch {
    return undefined;
  }
  const { proof, links, evidence } = document ?? {};
  const isText = (value: unknown) => typeof value === 'string' && value !== '';
  const isComplete =
    proof !== null &&
    typeof proof === 'object' &&
    proof.contentHash === contentHash &&
    proof.label === label &&
    isText(proof.id) &&
    isText(links?.proof) &&
    isText(evidence?.timestampToken) &&
    isText(evidence?.tlogProof);
  return isComplete
    ? { idempotentReplay: true, proof: proof as Proof, url: links!.proof as string }
    : undefined;
}
