import { rename, stat, writeFile } from 'node:fs/promises';
import { AGGREGATION_MAX_SIZE } from '../../core/aggregation.ts';
import {
  aggregate,
  aggregatedOts,
  aggregationMetadata,
  aggregationOrder,
  AggregationError,
  hashFile,
  LogCheckError,
  type HashproofClient,
} from '../../client/client.ts';
import { checkLog } from './log-memory.ts';
import { escapeControl, EXIT, print, printJson, UsageError } from '../output.ts';
import { checkLabel, listFiles, parseMetadata } from './stamp.ts';
import { stampProgress, type StampInput } from './progress.ts';
import { servedKeys } from './trusted-keys.ts';
import {
  witnessedEvidence,
  witnessesOf,
  WitnessQuorumError,
  witnessWaitOf,
  type WitnessValues,
} from './witnesses.ts';

/** The options of `hashproof stamp --aggregate`. */
interface AggregateValues extends WitnessValues {
  aggregate?: boolean;
  ots?: boolean;
  label?: string;
  metadata?: string[];
  out?: string;
  json?: boolean;
}

/**
 * `hashproof stamp --aggregate <file|dir>… [--ots]`: one proof for the set (docs/cli.md). The files'
 * digests are the leaves of an RFC 6962 tree whose root alone is notarized; each file gets
 * `<file>.proof.json` with its path to the root. With --ots, each file also gets `<file>.ots` once
 * the proof's checkpoint is anchored; a later run of the same command (no new proof: the same
 * idempotency key) writes those not written before.
 */
export async function stampAggregate(
  client: HashproofClient,
  named: string[],
  values: AggregateValues,
): Promise<number> {
  if (!values.aggregate)
    throw new UsageError('--ots works with --aggregate (a single proof has its own .ots)');
  if (named.length === 0) throw new UsageError('stamp --aggregate needs at least one file or directory');
  if (named.includes('-')) throw new UsageError('stamp --aggregate takes files and directories, not -');
  if (values.out !== undefined)
    throw new UsageError('--out does not work with --aggregate: each file gets its own proof file');
  if (values.label !== undefined) checkLabel(values.label);
  const witnesses = witnessesOf(values);
  const witnessWaitMs = witnessWaitOf(values);
  const extra = parseMetadata(values.metadata ?? []) ?? {};
  for (const key of ['aggregate', 'count'])
    if (key in extra) throw new UsageError(`--metadata ${key}=… is not allowed: the aggregation sets it`);
  const names: string[] = [];
  for (const input of named) names.push(...(await setFiles(input)));
  checkSet(names);
  const hashed = await hashAll(names);
  let files;
  try {
    files = aggregationOrder(hashed);
    aggregationMetadata(files.length, extra);
  } catch (error) {
    if (error instanceof AggregationError) throw new UsageError(error.message);
    throw error;
  }
  // The receipt key from the service's manifest, checked against the keys remembered for it.
  const keyed = { ...client, keys: async () => ({ keys: await servedKeys(client) }) };
  const result = await aggregate(keyed, {
    files,
    ...(values.label === undefined ? {} : { label: values.label }),
    metadata: extra,
  });
  // The log's checkpoint must extend every one of it seen before (docs/cli.md).
  await checkLog(client, await servedKeys(client), result.files[0]?.document.evidence.tlogProof);
  // With witnesses, the shared proof's checkpoint must carry their quorum (waited for, then brought up).
  const shared = result.files[0]?.document;
  let rejected: LogCheckError | undefined;
  const witnessed =
    witnesses === undefined || shared === undefined
      ? undefined
      : await witnessedEvidence(client, shared.proof, shared.evidence, await servedKeys(client), witnesses, {
          waitMs: witnessWaitMs,
        }).catch((error: unknown) => {
          // A rejected checkpoint: the files are still written, with the log's checkpoint, then it fails.
          if (!(error instanceof LogCheckError)) throw error;
          rejected = error;
          return undefined;
        });
  if (witnessed !== undefined) for (const file of result.files) file.document.evidence = witnessed.evidence;
  for (const file of result.files)
    await writeFile(`${file.path}.proof.json`, JSON.stringify(file.document, null, 2) + '\n');
  const ots = values.ots ? await writeOtsFiles(client, result) : undefined;
  const url = result.files[0]!.document.links.proof;
  if (values.json)
    printJson({
      root: result.root,
      idempotentReplay: result.idempotentReplay,
      proof: result.proof,
      url,
      files: result.files.map((file) => ({
        file: file.path,
        proofFile: `${file.path}.proof.json`,
        index: file.aggregation.index,
        ...(ots === undefined
          ? {}
          : {
              ots: ots.isAnchored ? `${file.path}.ots` : null,
            }),
      })),
      ...(ots === undefined ? {} : { otsAnchored: ots.isAnchored }),
    });
  else {
    print(
      escapeControl(
        `${result.idempotentReplay ? 'already stamped' : 'stamped'} ${result.files.length} files as one proof (root ${result.root})  ${url}`,
      ),
    );
    if (ots !== undefined)
      print(
        ots.isAnchored
          ? `wrote ${ots.written} .ots files (${ots.kept} already there)`
          : 'no .ots files yet: no anchored checkpoint holds the proof; run the same command again later',
      );
  }
  if (rejected !== undefined) throw rejected;
  if (witnessed?.problem !== undefined)
    throw new WitnessQuorumError(
      `${witnessed.problem}. The proof is made and its files written with the checkpoint the log gave; hashproof verify --online with the same --witness options brings a proof file up to a cosigned checkpoint later`,
    );
  return EXIT.ok;
}

/** What makes no aggregation, told before a byte is hashed: no file, too many, one named twice. */
function checkSet(names: string[]): void {
  if (names.length === 0) throw new UsageError('stamp --aggregate found no files to stamp');
  if (names.length > AGGREGATION_MAX_SIZE)
    throw new UsageError(
      `stamp --aggregate takes at most ${AGGREGATION_MAX_SIZE} files; these are ${names.length}`,
    );
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw new UsageError(`${name} is named twice`);
    seen.add(name);
  }
}

/**
 * Each file's hash, one file at a time (a set of thousands opens no more than one), with the
 * progress line of `stamp` on a terminal.
 */
async function hashAll(files: string[]): Promise<Array<{ path: string; contentHash: string }>> {
  const inputs: StampInput[] = await Promise.all(
    files.map(async (file) => ({ file, sizeBytes: (await stat(file)).size })),
  );
  const progress = stampProgress(inputs, process.stderr, print);
  const hashed: Array<{ path: string; contentHash: string }> = [];
  try {
    for (const input of inputs) {
      hashed.push({ path: input.file, contentHash: await hashFile(input.file, progress.hashing(input)) });
      progress.done(input, undefined);
    }
  } finally {
    progress.end();
  }
  return hashed;
}

/**
 * Writes `<file>.ots` for each file that has none, from the proof's own .ots once its checkpoint is
 * anchored; nothing before. An existing one is kept (it was written from the same proof).
 */
async function writeOtsFiles(
  client: HashproofClient,
  result: Awaited<ReturnType<typeof aggregate>>,
): Promise<{ isAnchored: boolean; written: number; kept: number }> {
  const anchors = await client.anchors(result.proof.id);
  if (anchors?.ots === undefined) return { isAnchored: false, written: 0, kept: 0 };
  const proofOts = Buffer.from(anchors.ots, 'base64');
  let written = 0;
  let kept = 0;
  for (const file of result.files) {
    const target = `${file.path}.ots`;
    if (await exists(target)) {
      kept++;
      continue;
    }
    const digest = Buffer.from(file.contentHash.slice('sha256:'.length), 'hex');
    // Whole or not at all: a file cut short would be kept by the next run.
    await writeFile(`${target}.partial`, aggregatedOts(proofOts, digest, file.aggregation));
    await rename(`${target}.partial`, target);
    written++;
  }
  return { isAnchored: true, written, kept };
}

const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

/**
 * The files of one argument as plain `stamp` lists them, less the `.ots` of a file of the set (what
 * --ots wrote), so a later run aggregates the same set.
 */
async function setFiles(input: string): Promise<string[]> {
  const files = await listFiles(input);
  const set = new Set(files);
  return files.filter((file) => !(file.endsWith('.ots') && set.has(file.slice(0, -'.ots'.length))));
}
