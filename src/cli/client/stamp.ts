import { readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LABEL_MAX_LENGTH, SINGLE_LINE_PATTERN } from '../../core/field-rules.ts';
import {
  hashFile,
  hashStream,
  LogCheckError,
  type HashproofClient,
  type ManifestKey,
  type WitnessPolicy,
} from '../../client/client.ts';
import { checkLog } from './log-memory.ts';
import { idempotencyKeyOf, stampManyFiles, type StampResult } from './stamp-many.ts';
import { EXIT, escapeControl, jsonSafe, print, printJson, UsageError } from '../output.ts';
import { stampProgress, type StampInput } from './progress.ts';
import { servedKeys } from './trusted-keys.ts';
import {
  witnessedEvidence,
  witnessesOf,
  witnessProofFiles,
  WitnessQuorumError,
  witnessWaitOf,
  type WitnessValues,
} from './witnesses.ts';

/** The options of `hashproof stamp`. */
interface StampValues extends WitnessValues {
  label?: string;
  metadata?: string[];
  out?: string;
  json?: boolean;
}

/**
 * `hashproof stamp <file|dir|->…`: every file named, directories file by file, standard input alone.
 * What the service would refuse (a label of two lines) is told before any file is hashed.
 */
export async function stamp(client: HashproofClient, paths: string[], values: StampValues): Promise<number> {
  if (paths.length === 0) throw new UsageError('stamp needs at least one file, directory or -');
  const metadata = parseMetadata(values.metadata ?? []);
  const files: string[] = [];
  for (const named of paths) files.push(...(named === '-' ? ['-'] : await listFiles(named)));
  if (values.out && files.length !== 1) throw new UsageError('--out works with a single input');
  if (files.includes('-') && files.length > 1)
    throw new UsageError(
      'stamp - takes no other inputs (its proof file goes to standard output, or to --out)',
    );
  if (values.label !== undefined) checkLabel(values.label);
  const policy = witnessesOf(values);
  const witnesses = policy && { policy, waitMs: witnessWaitOf(values), problems: [] as string[] };
  const results = await stampFiles(client, files, {
    label: values.label,
    metadata,
    out: values.out,
    json: values.json,
    keys: () => servedKeys(client),
    print,
    ...(witnesses === undefined ? {} : { witnesses }),
  });
  if (witnesses !== undefined && files.length > 1) {
    // Many files: their proof files are brought up together to one cosigned checkpoint.
    const written = results.flatMap((r) => (r.proofFile === null ? [] : [r.proofFile]));
    const problem = await witnessProofFiles(client, written, await servedKeys(client), witnesses);
    if (problem !== undefined) witnesses.problems.push(problem);
  }
  if (values.json) printJson(results.length === 1 ? results[0] : results);
  if (witnesses !== undefined && witnesses.problems.length > 0)
    throw new WitnessQuorumError(
      `${witnesses.problems[0]}. The proof${files.length === 1 ? ' is' : 's are'} made and written with the checkpoint the log gave; hashproof verify --online with the same --witness options brings a proof file up to a cosigned checkpoint later`,
    );
  return EXIT.ok;
}

/** The service's rule for a label (1 to 120 characters, one line), told before any file is hashed. */
export function checkLabel(label: string): void {
  if (label === '') throw new UsageError('--label must not be empty');
  if (!new RegExp(SINGLE_LINE_PATTERN).test(label))
    throw new UsageError('--label must be one line only (no line breaks, tabs or other control characters)');
  const length = [...label].length;
  if (length > LABEL_MAX_LENGTH)
    throw new UsageError(`--label is ${length} characters long; at most ${LABEL_MAX_LENGTH}`);
}

export function parseMetadata(pairs: string[]): Record<string, string> | undefined {
  if (pairs.length === 0) return undefined;
  const metadata: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--metadata takes key=value, got ${JSON.stringify(pair)}`);
    metadata[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return metadata;
}

/** A file named, or every file of a directory named (recursively, proof files left out), sorted. */
export async function listFiles(input: string): Promise<string[]> {
  let info;
  try {
    info = await stat(input);
  } catch {
    throw new UsageError(`no such file or directory: ${input}`);
  }
  if (info.isFile()) return [input];
  if (!info.isDirectory())
    throw new UsageError(
      `${input} is not a regular file or a directory: stamp a file, a directory or - (standard input)`,
    );
  const entries = await readdir(input, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && !e.name.endsWith('.proof.json'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

export interface StampOptions {
  label?: string;
  metadata?: Record<string, unknown>;
  /** Where the single file's proof document goes, instead of `<file>.proof.json`. */
  out?: string;
  /** Print nothing per file (the caller prints the results as JSON). */
  json?: boolean;
  /** The service's key manifest, fetched once. */
  keys: () => Promise<ManifestKey[]>;
  print: (line: string) => void;
  /**
   * Witnesses whose quorum must cosign each proof's checkpoint (one file; many are brought up after):
   * waited for at most `waitMs`; why it was not met goes to `problems`.
   */
  witnesses?: { policy: WitnessPolicy; waitMs: number; problems: string[] };
}

/**
 * Stamps each file (`-` is standard input): hashes it as a stream, creates its proof with an
 * idempotency key derived from the hash and the label (a re-run returns the proof already made and
 * never pays twice), and writes the proof document with its offline evidence beside the file. Many
 * files go through batches (stamp-many.ts); one file, or standard input, is stamped on its own.
 */
export async function stampFiles(
  client: HashproofClient,
  files: string[],
  options: StampOptions,
): Promise<StampResult[]> {
  const inputs: StampInput[] = await Promise.all(
    files.map(async (file) => ({ file, sizeBytes: file === '-' ? undefined : (await stat(file)).size })),
  );
  if (files.length > 1) return stampManyFiles(client, files, inputs, options);
  const progress = stampProgress(inputs, process.stderr, options.print);
  const results: StampResult[] = [];
  let rejected: LogCheckError | undefined;
  // The progress line goes away before any error is told.
  try {
    for (const input of inputs) {
      const { file } = input;
      const onBytes = progress.hashing(input);
      const contentHash =
        file === '-' ? await hashStream(process.stdin, onBytes) : await hashFile(file, onBytes);
      progress.hashed(input);
      progress.stamping(input);
      const label = options.label ?? (file === '-' ? 'stdin' : path.basename(file));
      const idempotencyKey = idempotencyKeyOf(contentHash, label);
      const result = await client.notarize({
        contentHash,
        label,
        idempotencyKey,
        ...(options.metadata ? { metadata: options.metadata } : {}),
      });
      const pageUrl = client.baseUrl + result.links.proof;
      const receiptKeyId = result.proof.receipt?.keyId;
      const receiptKey = receiptKeyId
        ? (await options.keys()).find((k) => k.keyId === receiptKeyId)
        : undefined;
      // The RFC 3161 token with its TSA chain, and the log's inclusion proof once the proof is in it.
      let evidence = await client.evidence(result.proof.id);
      // Once integrated, the proof names its place there, which its inclusion proof must then prove.
      const proof =
        evidence.tlogProof === undefined ? result.proof : (await client.getProof(result.proof.id)).proof;
      // The log's checkpoint must extend every one of it seen before (docs/cli.md).
      await checkLog(client, await options.keys(), evidence.tlogProof);
      if (options.witnesses !== undefined) {
        const { policy, waitMs, problems } = options.witnesses;
        try {
          const witnessed = await witnessedEvidence(client, proof, evidence, await options.keys(), policy, {
            waitMs,
          });
          evidence = witnessed.evidence;
          if (witnessed.problem !== undefined) problems.push(witnessed.problem);
        } catch (error) {
          // A checkpoint rejected (a witness's line that does not verify): the proof file is still
          // written, with the checkpoint the log gave, before the command fails.
          if (!(error instanceof LogCheckError)) throw error;
          rejected = error;
        }
      }
      const document = {
        proof,
        links: { proof: pageUrl, verify: client.baseUrl + result.links.verify },
        service: client.baseUrl,
        // The public key that signed the receipt, so the file verifies offline. Compare it with the
        // service's /.well-known/hashproof-keys.json (or a copy you trust) to know it is the service's.
        keys: receiptKey ? [receiptKey] : [],
        evidence,
      };
      const outFile = options.out ?? (file === '-' ? undefined : `${file}.proof.json`);
      const text = JSON.stringify(document, null, 2) + '\n';
      if (outFile) await writeFile(outFile, text);
      results.push({
        file,
        proofFile: outFile ?? null,
        ...(outFile === undefined && options.json ? { document } : {}),
        idempotentReplay: result.idempotentReplay,
        proof: result.proof,
        url: pageUrl,
      });
      // The page's address comes from the service: printed with its control characters escaped.
      const line = escapeControl(
        `${result.idempotentReplay ? 'already stamped' : 'stamped'} ${file === '-' ? 'standard input' : file}  ${pageUrl}`,
      );
      if (outFile === undefined && !options.json) {
        // Standard input has no file to write beside: its proof file is the output, the result line
        // goes to standard error (`hashproof stamp - < build.log > build.log.proof.json`).
        process.stdout.write(jsonSafe(document) + '\n');
        process.stderr.write(`${line}\n`);
        progress.done(input, undefined);
      } else progress.done(input, options.json ? undefined : line);
    }
  } finally {
    progress.end();
  }
  if (rejected !== undefined) throw rejected;
  return results;
}
