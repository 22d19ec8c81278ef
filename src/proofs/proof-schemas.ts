import { Type, type Static } from 'typebox';
import {
  CONTENT_HASH_PATTERN,
  LABEL_MAX_LENGTH,
  SINGLE_LINE_PATTERN as SINGLE_LINE,
  STORED_HASH_PATTERN,
} from '../core/field-rules.ts';
import { PROOF_ID_PATTERN } from '../core/ids.ts';

export const NotarizeBody = Type.Object(
  {
    contentHash: Type.String({
      pattern: CONTENT_HASH_PATTERN,
      description: 'SHA-256 of the content, computed by the caller: `sha256:` and 64 hex digits.',
    }),
    label: Type.String({
      minLength: 1,
      maxLength: LABEL_MAX_LENGTH,
      pattern: SINGLE_LINE,
      description: 'A short public title.',
    }),
    metadata: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'Non-secret JSON object, at most 8192 bytes. Never published: only its hash and key names are.',
        },
      ),
    ),
    idempotencyKey: Type.String({
      minLength: 1,
      maxLength: 160,
      pattern: SINGLE_LINE,
      description:
        'Chosen by the caller; a retry with the same key returns the same proof. Searchable: no secrets.',
    }),
  },
  { additionalProperties: false },
);
export type NotarizeBody = Static<typeof NotarizeBody>;

const Payment = Type.Object(
  {
    network: Type.String(),
    payer: Type.String(),
    transaction: Type.String(),
    amount: Type.String({ description: 'Atomic units of the asset (USDC has 6 decimals).' }),
  },
  { additionalProperties: false },
);

export const Proof = Type.Object(
  {
    id: Type.String({ pattern: `^${PROOF_ID_PATTERN}$` }),
    verified: Type.Boolean({ description: 'The stored signature checks against its key, now.' }),
    timestamp: Type.String({ format: 'date-time' }),
    contentHash: Type.String({ pattern: STORED_HASH_PATTERN }),
    label: Type.String(),
    metadataHash: Type.String({ pattern: STORED_HASH_PATTERN }),
    metadataKeys: Type.Array(Type.String()),
    signature: Type.String({ description: '`hmac-sha256:<hex>`, or `[redacted]` in listings.' }),
    keyId: Type.String(),
    accountId: Type.Union([Type.String(), Type.Null()]),
    payment: Type.Union([Payment, Type.Null()]),
    receipt: Type.Union(
      [
        Type.Object(
          {
            keyId: Type.String({ description: 'Its public key is in /.well-known/hashproof-keys.json.' }),
            signature: Type.String({
              description: '`ed25519:` + base64 signature over the signing message.',
            }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      { description: 'A public-key signature anyone can check offline.' },
    ),
    timestampToken: Type.Union([Type.String(), Type.Null()], {
      description:
        'Path of the RFC 3161 time-stamp token of the proof (DER, application/timestamp-reply): its ' +
        'imprint is contentHash, its genTime the timestamp rounded up to the whole second; verify it ' +
        'with openssl ts.',
    }),
    log: Type.Union(
      [
        Type.Object(
          {
            origin: Type.String({ description: 'The log that holds the proof (C2SP checkpoint origin).' }),
            leafIndex: Type.Integer({ minimum: 0, description: 'The position of the proof in that log.' }),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ],
      {
        description:
          'Where the proof sits in the append-only Merkle log; null until the sequencer integrated it ' +
          '(within about a second). Inclusion proof: /api/proofs/{id}/inclusion.',
      },
    ),
  },
  { $id: 'Proof', additionalProperties: false },
);
export type Proof = Static<typeof Proof>;

const ProofRef = Type.Ref('Proof');

const ProofLinks = Type.Object({
  proof: Type.String({ description: 'Path of the public badge page, `/proof/<id>`.' }),
  verify: Type.String({ description: 'Path of the verification report, `/api/verify/proofs/<id>`.' }),
});

export const NotarizeResponse = Type.Object({
  ok: Type.Boolean(),
  mode: Type.Union([Type.Literal('demo'), Type.Literal('x402')]),
  idempotentReplay: Type.Boolean(),
  proof: ProofRef,
  links: ProofLinks,
});

export const ProofDocument = Type.Object({ ok: Type.Boolean(), proof: ProofRef, links: ProofLinks });

export const ProofList = Type.Object({
  ok: Type.Boolean(),
  proofs: Type.Array(ProofRef),
  limit: Type.Integer(),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` to get the next page; null on the last page.',
  }),
});

const Limit = Type.Integer({
  minimum: 1,
  maximum: 100,
  default: 20,
  description: 'Page size, 1 to 100 (default 20).',
});
const Cursor = Type.String({
  minLength: 1,
  maxLength: 40,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'From `nextCursor`.',
});

export const RecentQuery = Type.Object(
  { limit: Type.Optional(Limit), cursor: Type.Optional(Cursor) },
  { additionalProperties: false },
);
export type RecentQuery = Static<typeof RecentQuery>;

export const SearchQuery = Type.Object(
  {
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        pattern: SINGLE_LINE,
        description:
          'Exact id, content hash, metadata hash or account id; or part of a label (case-insensitive).',
      }),
    ),
    contentHash: Type.Optional(Type.String({ pattern: CONTENT_HASH_PATTERN })),
    metadataHash: Type.Optional(Type.String({ pattern: CONTENT_HASH_PATTERN })),
    accountId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: SINGLE_LINE })),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 160, pattern: SINGLE_LINE })),
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
);
export type SearchQuery = Static<typeof SearchQuery>;

export const ProofIdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

const Check = Type.Object({
  status: Type.Union([Type.Literal('valid'), Type.Literal('invalid'), Type.Literal('unavailable')]),
  algorithm: Type.String(),
  keyId: Type.String(),
  message: Type.String(),
});

export const VerifyReport = Type.Object({
  ok: Type.Boolean(),
  proofId: Type.String(),
  verified: Type.Boolean({ description: 'True when no check is invalid and the signature is valid.' }),
  checks: Type.Object({
    signature: Check,
    receipt: Check,
    timestamp: Check,
    inclusion: Type.Intersect([
      Check,
      Type.Object({
        leafIndex: Type.Union([Type.Integer(), Type.Null()]),
        treeSize: Type.Union([Type.Integer(), Type.Null()]),
      }),
    ]),
  }),
  keyId: Type.String(),
  signingMessage: Type.String({
    description: 'The exact bytes (UTF-8) that were signed: JCS canonical JSON.',
  }),
  checkedAt: Type.String({ format: 'date-time' }),
  proof: ProofRef,
});

export const BatchBody = Type.Object(
  {
    items: Type.Array(Type.Unknown({ description: 'A notarize body; checked as that route checks it.' }), {
      minItems: 1,
      maxItems: 1000,
      description:
        'Up to 1,000 notarize bodies, answered in the same order. Each is checked on its own: one bad item fails only itself.',
    }),
  },
  { additionalProperties: false },
);
export type BatchBody = Static<typeof BatchBody>;

const BatchItemError = Type.Object({
  code: Type.String(),
  message: Type.String(),
  details: Type.Object({}, { additionalProperties: true }),
});

/**
 * One item's answer. A single object with optional fields rather than a union: a thousand items are
 * serialized without trying each variant.
 */
const BatchItemAnswer = Type.Object(
  {
    ok: Type.Boolean({ description: 'true: `proof`, `links` and `evidence` are set; false: `error` is.' }),
    idempotentReplay: Type.Optional(Type.Boolean()),
    proof: Type.Optional(ProofRef),
    links: Type.Optional(ProofLinks),
    evidence: Type.Optional(
      Type.Object({
        timestampToken: Type.Union([Type.String(), Type.Null()], {
          description:
            'The RFC 3161 token of the proof, base64 DER (TimeStampResp), as a proof file holds it in `evidence.timestampToken`.',
        }),
      }),
    ),
    error: Type.Optional(BatchItemError),
  },
  {
    description:
      'As notarize would answer this item alone: `{ ok: true, idempotentReplay, proof, links, evidence }` or `{ ok: false, error: { code, message, details } }`.',
  },
);

export const BatchResponse = Type.Object({
  ok: Type.Boolean(),
  mode: Type.Union([Type.Literal('demo'), Type.Literal('x402')]),
  items: Type.Array(BatchItemAnswer),
});
