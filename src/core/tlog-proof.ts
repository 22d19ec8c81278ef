/**
 * The C2SP tlog-proof file (https://c2sp.org/tlog-proof): a header line, the leaf index, the inclusion
 * proof's hashes in base64, a blank line, then the signed checkpoint the proof leads to.
 */
interface TlogProof {
  leafIndex: number;
  hashes: Uint8Array[];
  /** The checkpoint as a C2SP signed note, verbatim. */
  checkpoint: string;
}

const HEADER = 'c2sp.org/tlog-proof@v1';

export function formatTlogProof({ leafIndex, hashes, checkpoint }: TlogProof): string {
  return [
    HEADER,
    `index ${leafIndex}`,
    ...hashes.map((hash) => Buffer.from(hash).toString('base64')),
    '',
    checkpoint,
  ].join('\n');
}

/** Throws on anything that is not a tlog-proof file. */
export function parseTlogProof(text: string): TlogProof {
  const lines = text.split('\n');
  const index = /^index (0|[1-9]\d{0,15})$/.exec(lines[1] ?? '')?.[1];
  const blank = lines.indexOf('', 2);
  if (lines[0] !== HEADER || index === undefined || blank < 0)
    throw new Error('not a c2sp.org/tlog-proof@v1 file');
  const hashes = lines.slice(2, blank).map((line) => {
    const hash = Buffer.from(line, 'base64');
    if (hash.length !== 32 || hash.toString('base64') !== line)
      throw new Error('a proof hash is not 32 bytes of base64');
    return hash;
  });
  return { leafIndex: Number(index), hashes, checkpoint: lines.slice(blank + 1).join('\n') };
}
