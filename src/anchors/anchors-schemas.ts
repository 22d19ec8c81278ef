import { Type } from 'typebox';

const TreeSize = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const Base64Hash = Type.String({ description: 'A SHA-256 hash, base64.' });

const Rfc3161Anchor = Type.Object({
  url: Type.String({
    description: 'The time-stamping authority that signed the token, as `scheme://host[:port]/path` only.',
  }),
  genTime: Type.String({ format: 'date-time', description: "The authority's time for the token." }),
  token: Type.String({
    description:
      "The DER TimeStampToken, base64. Its imprint is the SHA-256 of the checkpoint's bytes: " +
      '`openssl ts -verify -data checkpoint.txt -token_in -in token.der -CAfile <that authority root>`.',
  }),
});
const OtsAnchor = Type.Object({
  calendar: Type.String({
    description:
      'The OpenTimestamps calendar the root hash was submitted to, as `scheme://host[:port]/path` only.',
  }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('claimed'), Type.Literal('bitcoin')], {
    description:
      '`pending`: not in Bitcoin yet; `claimed`: the calendar says a Bitcoin block holds it and no block ' +
      'header was checked; `bitcoin`: the block header was checked (its Merkle root is the attested value).',
  }),
  bitcoinHeight: Type.Optional(
    Type.Integer({ description: 'The Bitcoin block that holds it (claimed, or checked for `bitcoin`).' }),
  ),
});
const AnchorFields = {
  treeSize: TreeSize,
  rootHash: Base64Hash,
  checkpoint: Type.String({ description: 'The signed C2SP checkpoint that was anchored, verbatim.' }),
  rfc3161: Type.Array(Rfc3161Anchor),
  opentimestamps: Type.Array(OtsAnchor),
};

export const Anchor = Type.Object(AnchorFields);
export const AnchorList = Type.Object({
  anchors: Type.Array(Anchor),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as `cursor` to get the next page; null on the last page.',
  }),
});
export const AnchorListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,15}$', description: 'From `nextCursor`.' })),
  },
  { additionalProperties: false },
);
export const ProofAnchor = Type.Object({
  proofId: Type.String(),
  ...AnchorFields,
  inclusion: Type.Object({
    leafIndex: Type.Integer({ minimum: 0 }),
    treeSize: TreeSize,
    rootHash: Base64Hash,
    hashes: Type.Array(Base64Hash, { description: 'RFC 6962 audit path in the anchored tree.' }),
  }),
});
