import { Type, type Static } from 'typebox';
import { SINGLE_LINE_PATTERN as SINGLE_LINE } from '../core/field-rules.ts';

const ShortText = (description: string) =>
  Type.String({ minLength: 1, maxLength: 120, pattern: SINGLE_LINE, description });
const DateTime = Type.String({ format: 'date-time' });
const NullableDateTime = Type.Union([DateTime, Type.Null()]);

const SCOPES = ['proofs:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const Account = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    ownerLabel: Type.String(),
    status: Type.Literal('active'),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'Account', additionalProperties: false },
);
export type Account = Static<typeof Account>;

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    accountId: Type.String(),
    name: Type.String(),
    keyPrefix: Type.String({ description: 'The first 11 characters of the key, to recognise it.' }),
    scopes: Type.Array(Type.String()),
    status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
    createdAt: DateTime,
    lastUsedAt: Type.Union([DateTime, Type.Null()], { description: 'May lag by up to a minute.' }),
    revokedAt: NullableDateTime,
  },
  { $id: 'ApiKey', additionalProperties: false },
);
export type ApiKey = Static<typeof ApiKey>;

export const CreateAccountBody = Type.Object(
  {
    name: Type.Optional(ShortText('Display name.')),
    ownerLabel: Type.Optional(ShortText('Who owns the account.')),
  },
  { additionalProperties: false },
);
export type CreateAccountBody = Static<typeof CreateAccountBody>;

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.Optional(ShortText('What the key is for.')),
    scopes: Type.Optional(
      Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
        minItems: 1,
        uniqueItems: true,
        description: 'Default ["proofs:write"].',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;

export const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

export const AccountResponse = Type.Object({ ok: Type.Boolean(), account: Type.Ref('Account') });
export const AccountList = Type.Object({ ok: Type.Boolean(), accounts: Type.Array(Type.Ref('Account')) });
export const ApiKeyCreated = Type.Object({
  ok: Type.Boolean(),
  apiKey: Type.Ref('ApiKey'),
  key: Type.String({ description: 'The raw key. Shown this once: store it now.' }),
});
export const ApiKeyResponse = Type.Object({ ok: Type.Boolean(), apiKey: Type.Ref('ApiKey') });
export const ApiKeyList = Type.Object({ ok: Type.Boolean(), apiKeys: Type.Array(Type.Ref('ApiKey')) });
