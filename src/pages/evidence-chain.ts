import { leafHash } from '../core/merkle.ts';
import { signingMessage } from '../core/proof-signature.ts';
import type { encodeInclusion } from '../log/log-service.ts';
import type { Proof } from '../proofs/proof-schemas.ts';
import type { PageAnchor } from './anchor-facts.ts';
import { KEYS_MANIFEST_PATH } from '../keys/keyring.ts';
import { formatUtc, html, type SafeHtml } from './html.ts';
import { hostOf } from '../core/urls.ts';

/** What the proof page knows of a proof's evidence beyond the proof itself. */
export interface ProofEvidence {
  inclusion: ReturnType<typeof encodeInclusion> | undefined;
  anchor: PageAnchor | undefined;
  anchorsEnabled: boolean;
}

type StepState = 'done' | 'pending' | 'none';

interface Step {
  title: string;
  value: string;
  note: SafeHtml | string;
  state: StepState;
}

const STATE_TEXT: Record<StepState, string> = { done: 'in place', pending: 'pending', none: 'not used here' };

/** The first 12 hex digits of a hash, enough to recognise it. */
const shortHex = (hex: string): string => `${hex.slice(0, 12)}…`;

const hexOfBase64 = (base64: string): string => Buffer.from(base64, 'base64').toString('hex');

function treeStep(proof: Proof, evidence: ProofEvidence): Step {
  const { inclusion } = evidence;
  if (proof.log === null || inclusion === undefined) {
    return {
      title: 'Tree',
      value: 'not yet in the log',
      note: 'the log takes new proofs within about a second',
      state: 'pending',
    };
  }
  return {
    title: 'Tree',
    value: `leaf ${inclusion.leafIndex} of ${inclusion.treeSize}`,
    note:
      inclusion.hashes.length === 0
        ? 'the only leaf: the root is the leaf itself (RFC 6962)'
        : `root ${shortHex(hexOfBase64(inclusion.rootHash))}, reached from the leaf by ${inclusion.hashes.length} ${inclusion.hashes.length === 1 ? 'hash' : 'hashes'} (RFC 6962)`,
    state: 'done',
  };
}

function checkpointStep(proof: Proof, evidence: ProofEvidence): Step {
  const checkpoint = evidence.inclusion?.checkpoint ?? null;
  if (proof.log === null || checkpoint === null) {
    return { title: 'Checkpoint', value: 'not signed yet', note: 'follows the tree', state: 'pending' };
  }
  const signer = /^\u2014 (\S+) /m.exec(checkpoint)?.[1] ?? proof.log.origin;
  return {
    title: 'Checkpoint',
    value: proof.log.origin,
    note: html`of size ${String(evidence.inclusion?.treeSize ?? 0)}, signed by the log
    key${signer === proof.log.origin ? '' : html` <code>${signer}</code>`} (C2SP signed note)`,
    state: 'done',
  };
}

function anchorStep(evidence: ProofEvidence): Step {
  const { anchor, anchorsEnabled } = evidence;
  const title = 'Outside time-stamps';
  if (!anchorsEnabled) {
    return {
      title,
      value: 'none',
      note: 'this service anchors its log with no outside authority',
      state: 'none',
    };
  }
  if (anchor === undefined) {
    return {
      title,
      value: 'not yet',
      note: 'the newest checkpoint is anchored at regular intervals',
      state: 'pending',
    };
  }
  const parts = [
    ...anchor.rfc3161.map((t) => `RFC 3161 by ${hostOf(t.url)} at ${formatUtc(t.genTime)}`),
    ...anchor.opentimestamps.map((c) =>
      c.status === 'bitcoin'
        ? `Bitcoin block ${String(c.bitcoinHeight)}`
        : c.status === 'claimed'
          ? `Bitcoin block ${String(c.bitcoinHeight)} (claimed, header not checked)`
          : 'Bitcoin: pending',
    ),
  ];
  const isConfirmed = anchor.rfc3161.length > 0 || anchor.opentimestamps.some((c) => c.status === 'bitcoin');
  return {
    title,
    value: parts.join('; ') || 'pending',
    note: `of the checkpoint of ${anchor.treeSize} entries that holds this proof`,
    state: isConfirmed ? 'done' : 'pending',
  };
}

/**
 * The chain of evidence of a proof as a figure: content hash → leaf → tree → checkpoint → outside
 * time-stamps, each with this proof's values, and the steps not yet available marked pending. It is an
 * ordered list drawn as boxes and arrows by the stylesheet, so the text is its own alternative.
 */
export function renderEvidenceChain(proof: Proof, evidence: ProofEvidence): SafeHtml {
  const hex = proof.contentHash.slice('sha256:'.length);
  const leaf = leafHash(Buffer.from(signingMessage(proof), 'utf8')).toString('hex');
  const steps: Step[] = [
    {
      title: 'Content hash',
      value: `sha256:${shortHex(hex)}`,
      note: 'the SHA-256 of your file',
      state: 'done',
    },
    {
      title: 'Leaf',
      value: shortHex(leaf),
      note: 'the signing message: id, time, hashes and label, signed by the HMAC key and the receipt key',
      state: 'done',
    },
    treeStep(proof, evidence),
    checkpointStep(proof, evidence),
    anchorStep(evidence),
  ];
  const done = steps.filter((step) => step.state === 'done').length;
  return html`<figure id="evidence-chain" class="chain" aria-labelledby="evidence-chain-caption">
    <figcaption id="evidence-chain-caption">
      The chain of evidence, from your file's hash to outside time-stamps: ${done} of ${steps.length} steps in
      place.
    </figcaption>
    <ol class="chain-steps">
      ${steps.map(
        (step) =>
          html`<li class="chain-step chain-${step.state}">
            <span class="chain-title">${step.title}</span>
            <code class="chain-value">${step.value}</code>
            <span class="chain-note">${step.note}</span>
            <span class="chain-state">${STATE_TEXT[step.state]}</span>
          </li>`,
      )}
    </ol>
  </figure>`;
}

/** The evidence this proof has, one line each: present or not, and what it proves. */
export function renderProofEvidence(proof: Proof, evidence: ProofEvidence): SafeHtml {
  const { id } = proof;
  const { anchor, anchorsEnabled } = evidence;
  const has = (present: boolean, text: SafeHtml | string) =>
    html`<span class="tag ${present ? 'tag-yes' : 'tag-no'}">${text}</span>`;
  const anchorState =
    anchor === undefined
      ? has(false, anchorsEnabled ? 'not yet' : 'none here')
      : has(true, `checkpoint of ${anchor.treeSize}`);
  return html`<ul class="proof-evidence" id="proof-evidence">
      <li>
        <strong>HMAC signature</strong>
        ${has(proof.verified, proof.verified ? 'verifies' : 'does not verify')} only this service can check
        it: <a href="/api/verify/proofs/${id}">verification report</a>
      </li>
      <li>
        <strong>Ed25519 receipt</strong>
        ${
          proof.receipt === null
            ? html`${has(false, 'none')} made before receipts existed`
            : html`${has(true, proof.receipt.keyId)} anyone checks it with the public key in the
                <a href="${KEYS_MANIFEST_PATH}">keys manifest</a>: the key signed this id, time, hashes and
                label`
        }
      </li>
      <li>
        <strong>RFC 3161 token</strong>
        ${
          proof.timestampToken === null
            ? html`${has(false, 'none')} made before tokens existed`
            : html`${has(true, 'present')} <a href="/api/proofs/${id}/timestamp.tsr" download>${id}.tsr</a>:
                the TSA signed that this content hash existed at the proof's time (<code
                  >openssl ts -verify</code
                >)`
        }
      </li>
      <li>
        <strong>Transparency log</strong>
        ${
          proof.log === null
            ? html`${has(false, 'not yet in the log')} it takes new proofs within about a second`
            : html`${has(true, `leaf ${proof.log.leafIndex}`)} the proof is in the append-only log, whose
              checkpoints the log key signs: it cannot be taken out or moved unseen`
        }
      </li>
      <li>
        <strong>Outside time-stamps</strong> ${anchorState} an authority we do not run, or Bitcoin, saw the
        checkpoint that holds the proof: its time no longer rests on our clock alone
      </li>
    </ul>
    <p>
      Check it all without us, with the proof file that <code>hashproof stamp FILE</code> writes:
      <code>hashproof verify FILE --keys hashproof-keys.json</code> (offline), or <code>--online</code> to add
      the HMAC check. The public keys: <a href="${KEYS_MANIFEST_PATH}">${KEYS_MANIFEST_PATH}</a>. What each
      piece proves and does not: <a href="/trust">Trust</a>.
    </p>`;
}
