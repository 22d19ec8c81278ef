import { createHash, type X509Certificate } from 'node:crypto';
import { leafHash, verifyInclusion } from '../core/merkle.ts';
import { attestationsOf, readDetachedFile, type OtsTimestamp } from '../core/opentimestamps.ts';
import { signingMessage, type SignedProofFields } from '../core/proof-signature.ts';
import { checkBitcoinHeader } from './bitcoin-header.ts';
import { checkExternalToken } from './external-token.ts';
import { openCheckpoint } from './log-checkpoints.ts';
import { hostOf } from '../core/urls.ts';

/**
 * The offline checks of a proof's anchors (docs/verification.md, "Verify without trusting hashproof at
 * all"): the anchored checkpoint is the log's, the proof is in its tree, each outside RFC 3161 token is
 * over that checkpoint (and chains to the roots given), and the OpenTimestamps file leads from the
 * proof's content hash through the anchored root to each attestation. Each check says what it proves.
 */

/** A proof's anchors as `/api/proofs/{id}/anchors` gives them, with the `.ots` file (base64) once saved. */
export interface ProofAnchors {
  proofId: string;
  treeSize: number;
  rootHash: string;
  checkpoint: string;
  inclusion: { leafIndex: number; treeSize: number; rootHash: string; hashes: string[] };
  rfc3161: { url: string; genTime: string; token: string }[];
  opentimestamps: { calendar: string; status: 'pending' | 'claimed' | 'bitcoin'; bitcoinHeight?: number }[];
  ots?: string;
}

/**
 * `unavailable`: the check could not be made, and the anchor does not verify; `unchecked`: what the
 * anchor claims rests on an outside root not given (an authority's root, a Bitcoin block header) or
 * is still pending, so it is reported and not counted.
 */
export interface AnchorCheck {
  name: string;
  status: 'valid' | 'invalid' | 'unavailable' | 'unchecked';
  message: string;
}

function checkpointCheck(anchors: ProofAnchors, logVerifierKey: string | undefined): AnchorCheck {
  const name = 'anchor checkpoint';
  if (logVerifierKey === undefined)
    return { name, status: 'unavailable', message: 'No log key to check the anchored checkpoint with' };
  try {
    const checkpoint = openCheckpoint(anchors.checkpoint, logVerifierKey);
    const matches =
      checkpoint.size === anchors.treeSize &&
      Buffer.from(checkpoint.rootHash).toString('base64') === anchors.rootHash;
    return matches
      ? { name, status: 'valid', message: `The log signed the anchored tree of ${anchors.treeSize} entries` }
      : { name, status: 'invalid', message: 'The anchored checkpoint is not the tree the anchors name' };
  } catch {
    return { name, status: 'invalid', message: 'The anchored checkpoint is not signed by the log key' };
  }
}

function inclusionCheck(proof: SignedProofFields, anchors: ProofAnchors): AnchorCheck {
  const name = 'anchor inclusion';
  const { inclusion } = anchors;
  const holds =
    inclusion.treeSize === anchors.treeSize &&
    inclusion.rootHash === anchors.rootHash &&
    verifyInclusion(
      inclusion.leafIndex,
      inclusion.treeSize,
      leafHash(Buffer.from(signingMessage(proof), 'utf8')),
      inclusion.hashes.map((h) => Buffer.from(h, 'base64')),
      Buffer.from(anchors.rootHash, 'base64'),
    );
  return holds
    ? { name, status: 'valid', message: `The proof is entry ${inclusion.leafIndex} of the anchored tree` }
    : { name, status: 'invalid', message: 'The proof is not in the anchored tree' };
}

function tokenCheck(
  anchors: ProofAnchors,
  token: ProofAnchors['rfc3161'][number],
  roots: X509Certificate[] | undefined,
): AnchorCheck {
  const name = `anchor rfc3161 ${hostOf(token.url)}`;
  const imprint = createHash('sha256').update(anchors.checkpoint, 'utf8').digest();
  const result = checkExternalToken(Buffer.from(token.token, 'base64'), { imprint }, roots);
  if (typeof result === 'string') return { name, status: 'invalid', message: `The token fails: ${result}` };
  const when = result.genTime.toISOString();
  const says = `${result.signer.replace(/\n/g, ', ')} time-stamped the checkpoint holding this proof at ${when}`;
  return result.chain === 'trusted'
    ? {
        name,
        status: 'valid',
        message: `${says}: the proof existed by then (a root of --tsa-roots vouches for the authority; this bounds the proof's time, it does not date it exactly)`,
      }
    : {
        name,
        status: 'unchecked',
        message: `Present: ${says}; its chain is not checked (give that authority's own root with --tsa-roots)`,
      };
}

/** The node of a timestamp whose message is `msg`, searched through every path. */
function nodeWith(t: OtsTimestamp, msg: Buffer): OtsTimestamp | undefined {
  if (t.msg.equals(msg)) return t;
  for (const { next } of t.ops) {
    const found = nodeWith(next, msg);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A Bitcoin block whose time is this long before the proof was made cannot hold it. */
const BLOCK_TIME_SLACK_MS = 2 * 3_600_000;

function otsChecks(
  proof: { contentHash: string; timestamp: string },
  anchors: ProofAnchors,
  bitcoinHeaders: Map<number, Buffer> | undefined,
): AnchorCheck[] {
  const name = 'anchor opentimestamps';
  if (anchors.opentimestamps.length === 0) return [];
  if (anchors.ots === undefined) {
    return [
      {
        name,
        status: 'unavailable',
        message: 'The .ots file is not in the proof file (hashproof verify --online saves it)',
      },
    ];
  }
  let file: { digest: Buffer; timestamp: OtsTimestamp };
  try {
    file = readDetachedFile(Buffer.from(anchors.ots, 'base64'));
  } catch {
    return [{ name, status: 'invalid', message: 'The saved .ots file does not parse' }];
  }
  if (file.digest.toString('hex') !== proof.contentHash.slice('sha256:'.length))
    return [{ name, status: 'invalid', message: "The .ots file is about another file's hash" }];
  const root = nodeWith(file.timestamp, Buffer.from(anchors.rootHash, 'base64'));
  if (root === undefined)
    return [{ name, status: 'invalid', message: 'The .ots file does not lead to the anchored root' }];
  const found = attestationsOf(root);
  if (found.length === 0) return [{ name, status: 'invalid', message: 'The .ots file holds no attestation' }];
  return found.map(({ msg, attestation }) => {
    if (attestation.kind === 'bitcoin') {
      const check = `${name} bitcoin ${attestation.height}`;
      const header = bitcoinHeaders?.get(attestation.height);
      if (header === undefined) {
        const claimant = anchors.opentimestamps.find((o) => o.bitcoinHeight === attestation.height);
        return {
          name: check,
          status: 'unchecked' as const,
          message:
            `Bitcoin block ${attestation.height} claimed by ${claimant ? hostOf(claimant.calendar) : 'a calendar'}, ` +
            'header not checked (--bitcoin-headers URL)',
        };
      }
      const problem = checkBitcoinHeader(header, {
        height: attestation.height,
        merkleRoot: msg,
        notBefore: Date.parse(proof.timestamp) - BLOCK_TIME_SLACK_MS,
      });
      if (problem !== undefined)
        return { name: check, status: 'invalid' as const, message: `The Bitcoin claim fails: ${problem}` };
      return {
        name: check,
        status: 'valid' as const,
        message:
          `Your file's hash leads through the anchored root to ${msg.toString('hex')}, the Merkle root of ` +
          `Bitcoin block ${attestation.height} (its header checked): the file existed before that block`,
      };
    }
    if (attestation.kind === 'pending') {
      return {
        name: `${name} ${hostOf(attestation.uri)}`,
        status: 'unchecked' as const,
        message: 'Pending at the calendar: not in Bitcoin yet (verify --online later fetches the upgrade)',
      };
    }
    return { name, status: 'unchecked' as const, message: 'An attestation of a kind not checked here' };
  });
}

/**
 * Every offline check of a proof's saved anchors; `roots` are the outside authorities' trust roots,
 * `bitcoinHeaders` the 80-byte headers of the Bitcoin blocks the caller fetched, by height: a Bitcoin
 * attestation counts only when its block's header is among them and holds the attested Merkle root.
 */
export function checkAnchors(
  proof: SignedProofFields & { contentHash: string },
  anchors: ProofAnchors,
  trust: { roots?: X509Certificate[]; logVerifierKey?: string; bitcoinHeaders?: Map<number, Buffer> },
): AnchorCheck[] {
  if (anchors.proofId !== proof.id)
    return [{ name: 'anchors', status: 'invalid', message: 'The saved anchors are of another proof' }];
  return [
    checkpointCheck(anchors, trust.logVerifierKey),
    inclusionCheck(proof, anchors),
    ...anchors.rfc3161.map((token) => tokenCheck(anchors, token, trust.roots)),
    ...otsChecks(proof, anchors, trust.bitcoinHeaders),
  ];
}
