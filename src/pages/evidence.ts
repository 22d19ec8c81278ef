import { Type, type Static } from 'typebox';
import type { Config } from '../config.ts';
import { KEYS_MANIFEST_PATH } from '../keys/keyring.ts';

/** The kinds of evidence a proof carries, what each proves and how to check it without the service. */

const EvidenceKind = Type.Union([
  Type.Literal('signature'),
  Type.Literal('receipt'),
  Type.Literal('timestampToken'),
  Type.Literal('logInclusion'),
  Type.Literal('anchorRfc3161'),
  Type.Literal('anchorBitcoin'),
]);
export type EvidenceKind = Static<typeof EvidenceKind>;

export const Evidence = Type.Object({
  kind: EvidenceKind,
  name: Type.String(),
  field: Type.String({ description: 'Where it is found: a field of the proof, or the URL that serves it.' }),
  issued: Type.Boolean({
    description:
      'Whether this instance gives it to new proofs now (the outside anchors only when configured).',
  }),
  proves: Type.String(),
  doesNotProve: Type.String(),
  checkWithoutUs: Type.String({ description: 'How to check it without asking this service.' }),
  command: Type.Union([Type.String(), Type.Null()], {
    description: 'A shell command that checks it (`ID` is the proof id, `FILE` your file); null for none.',
  }),
  links: Type.Record(Type.String(), Type.String(), {
    description: 'Absolute URLs: keys, certificates, checkpoint, docs; `{id}` stands for the proof id.',
  }),
});
export type Evidence = Static<typeof Evidence>;

/** Every kind of evidence, in the order the chain builds on it; `url` makes a path absolute. */
export function evidenceKinds(config: Config, url: (path: string) => string): Evidence[] {
  const keys = url(KEYS_MANIFEST_PATH);
  return [
    {
      kind: 'signature',
      name: 'HMAC signature',
      field: 'signature',
      issued: true,
      proves: 'this service stands by the proof now: its secret key signed the id, time, hashes and label',
      doesNotProve: 'anything to someone without the secret key: only this service can check it',
      checkWithoutUs:
        'It cannot be: only the service holds the key. Ask it (the verification report), or rely on the other evidence.',
      command: 'hashproof verify FILE --online',
      links: { verify: url('/api/verify/proofs/{id}') },
    },
    {
      kind: 'receipt',
      name: 'Ed25519 receipt',
      field: 'receipt',
      issued: true,
      proves: 'the receipt key signed this id, timestamp, content hash, metadata hash and label',
      doesNotProve:
        "that the key is the service's (a copy of the keys manifest you trust says so); that the clock was right",
      checkWithoutUs:
        'Offline, with the receipt key of the keys manifest: hashproof verify, or openssl pkeyutl -verify over the signing message.',
      command: 'hashproof verify FILE --keys hashproof-keys.json',
      links: { keys: keys, proof: url('/api/proofs/{id}') },
    },
    {
      kind: 'timestampToken',
      name: 'RFC 3161 time-stamp token',
      field: 'timestampToken',
      issued: true,
      proves: 'the service\'s time-stamp authority signed "this content hash existed at genTime"',
      doesNotProve: 'an independent witness: the authority and its root are run by the same operator',
      checkWithoutUs: 'With OpenSSL and the TSA root certificate, offline.',
      command: 'openssl ts -verify -digest HEX -in ID.tsr -CAfile tsa-root.pem',
      links: {
        token: url('/api/proofs/{id}/timestamp.tsr'),
        tsaCertificates: url('/api/tsa/certs.pem'),
        keys,
      },
    },
    {
      kind: 'logInclusion',
      name: 'Transparency log inclusion',
      field: 'log.leafIndex',
      issued: true,
      proves:
        'the proof is leaf N of an append-only Merkle tree of M leaves whose root the log key signed (C2SP checkpoint)',
      doesNotProve:
        'that everyone is shown the same tree, or that it is never rewritten: that takes consistency proofs and outside anchors',
      checkWithoutUs:
        "Offline, with the tlog-proof file and the log's verifier key of the keys manifest: hash the leaf, fold the audit path, check the checkpoint's signature.",
      command: 'hashproof verify FILE',
      links: {
        tlogProof: url('/api/proofs/{id}/tlog-proof'),
        inclusion: url('/api/proofs/{id}/inclusion'),
        checkpoint: url('/log/checkpoint'),
        keys,
      },
    },
    {
      kind: 'anchorRfc3161',
      name: 'Outside RFC 3161 time-stamp of the checkpoint',
      field: 'GET /api/proofs/{id}/anchors: rfc3161',
      issued: config.anchors.tsaUrls.length > 0,
      proves: 'an authority this service does not run saw the checkpoint that holds the proof by its genTime',
      doesNotProve:
        "the proof's exact time, only that it is no later; it is as good as that authority's root",
      checkWithoutUs: "With OpenSSL and the authority's root certificate, over the checkpoint's bytes.",
      command: 'openssl ts -verify -data checkpoint.txt -token_in -in anchor.tst -CAfile authority-root.pem',
      links: { anchors: url('/api/proofs/{id}/anchors'), logAnchors: url('/api/log/anchors') },
    },
    {
      kind: 'anchorBitcoin',
      name: 'OpenTimestamps in Bitcoin',
      field: 'GET /api/proofs/{id}/proof.ots',
      issued: config.anchors.otsCalendars.length > 0,
      proves: "your file's hash existed before Bitcoin block N, trusting no one but Bitcoin",
      doesNotProve: "a time finer than the block's (hours); anything while it is still pending",
      checkWithoutUs: 'With the OpenTimestamps client and a Bitcoin node or block headers.',
      command: 'ots verify -f FILE ID.ots',
      links: { ots: url('/api/proofs/{id}/proof.ots'), anchors: url('/api/proofs/{id}/anchors') },
    },
  ];
}
