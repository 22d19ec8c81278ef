import { Type } from 'typebox';

const TreeSize = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Base64Hash = Type.String({ description: 'A SHA-256 hash, base64.' });

export const InclusionQuery = Type.Object(
  { treeSize: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })) },
  { additionalProperties: false },
);
export const ConsistencyQuery = Type.Object(
  {
    from: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    to: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  },
  { additionalProperties: false },
);
/** An inclusion proof as `encodeInclusion` gives it. */
export const InclusionProof = Type.Object({
  leafIndex: TreeSize,
  treeSize: TreeSize,
  rootHash: Base64Hash,
  hashes: Type.Array(Base64Hash, { description: 'RFC 6962 audit path, from the leaf sibling up.' }),
  checkpoint: Type.Union([Type.String(), Type.Null()], {
    description: 'The signed C2SP checkpoint of that tree size (null for a size the log never signed).',
  }),
});
export const ConsistencyProof = Type.Object({ from: TreeSize, to: TreeSize, hashes: Type.Array(Base64Hash) });
export const CosignedQuery = Type.Object(
  {
    witnesses: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 64,
        description: 'How many of the configured witnesses must have cosigned it (default 1).',
      }),
    ),
  },
  { additionalProperties: false },
);
