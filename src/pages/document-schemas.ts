import { Type, type Static, type TSchema } from 'typebox';
import { Evidence } from './evidence.ts';

/** Response schemas of the public JSON documents (docs/pages.md), so /openapi.json describes each exactly. */

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const Url = Type.String({ format: 'uri' });
const Mode = Type.Union([Type.Literal('demo'), Type.Literal('x402')]);
const JsonSchema = Type.Object(
  {},
  { additionalProperties: true, description: 'A JSON Schema (2020-12) of the inputs.' },
);

export const PaymentTerms = Type.Object(
  {
    mode: Mode,
    required: Type.Boolean({ description: 'Whether creating a proof must be paid (x402 mode).' }),
    price: Nullable(Type.String({ description: 'As configured, for example `$0.005`.' })),
    amount: Nullable(Type.String({ description: 'Decimal amount without the currency sign.' })),
    currency: Nullable(Type.Literal('USD')),
    protocol: Nullable(Type.Literal('x402')),
    x402Version: Nullable(Type.Integer()),
    scheme: Nullable(Type.String()),
    network: Nullable(Type.String({ description: 'CAIP-2 network id, for example `eip155:8453`.' })),
    networkName: Nullable(Type.String()),
    payTo: Nullable(Type.String()),
    discoveryUrl: Url,
  },
  { description: 'Payment terms of proof creation; the x402 fields are null in demo mode.' },
);
export type PaymentTerms = Static<typeof PaymentTerms>;

export const Limits = Type.Object({
  labelMaxLength: Type.Integer(),
  idempotencyKeyMaxLength: Type.Integer(),
  metadataMaxBytes: Type.Integer(),
  bodyMaxBytes: Type.Integer(),
  searchLimitMax: Type.Integer(),
  searchLimitDefault: Type.Integer(),
  batch: Type.Object(
    {
      maxItems: Type.Integer(),
      maxBytes: Type.Integer(),
      itemsPerRequest: Type.Integer({
        description:
          'A batch counts one request against the rate limit per started group of this many items.',
      }),
    },
    { description: 'POST /api/proof/batch: many proofs in one request.' },
  ),
  rateLimit: Nullable(
    Type.Object(
      { max: Type.Integer(), windowSeconds: Type.Integer() },
      { description: 'Requests per window and client; null when the limiter is off.' },
    ),
  ),
});

const Operation = Type.Object({
  method: Type.String(),
  path: Type.String(),
  summary: Type.String(),
  paid: Type.Boolean(),
});

const RemoteServer = Type.Object({
  type: Type.Literal('http', { description: 'Streamable HTTP.' }),
  url: Url,
});
const LocalServer = Type.Object({
  command: Type.String({ description: 'The Node 24 that a checkout of hashproof brings.' }),
  args: Type.Array(Type.String(), { description: 'The `hashproof` command and its subcommand `mcp`.' }),
  env: Type.Record(Type.String(), Type.String(), { description: 'HASHPROOF_URL: this service.' }),
});
const ToolNames = Type.Array(Type.String(), { description: 'The names `tools/list` answers, in its order.' });

export const McpSetup = Type.Object(
  {
    remote: Type.Object(
      {
        transport: Type.Literal('streamable-http'),
        url: Type.String({
          format: 'uri',
          description: 'The Model Context Protocol endpoint of this service.',
        }),
        tools: ToolNames,
        apiKeyHeader: Type.String({
          description:
            "Add `headers` with this header and an account's API key to the entry to bill new proofs to the account.",
        }),
        configuration: Type.Object(
          { mcpServers: Type.Object({ hashproof: RemoteServer }) },
          { description: "An agent host's configuration file: paste it as it is." },
        ),
      },
      { description: 'For an agent anywhere: the service itself, nothing to install.' },
    ),
    local: Type.Object(
      {
        transport: Type.Literal('stdio'),
        command: Type.String({ description: 'The command the entry runs: `hashproof mcp`.' }),
        tools: ToolNames,
        placeholders: Type.Record(Type.String(), Type.String(), {
          description: 'Text of the entry to replace before use, and with what.',
        }),
        configuration: Type.Object(
          { mcpServers: Type.Object({ hashproof: LocalServer }) },
          { description: "An agent host's configuration file, once its placeholders are replaced." },
        ),
      },
      {
        description:
          "For an agent on the user's machine: files are hashed there and proof files written beside them.",
      },
    ),
    page: Type.String({ format: 'uri', description: 'The same, for people: the page /agents.' }),
  },
  { description: 'The Model Context Protocol servers of hashproof and their `mcpServers` configuration.' },
);
export type McpSetup = Static<typeof McpSetup>;

export const Capabilities = Type.Object({
  ok: Type.Boolean(),
  service: Type.String(),
  version: Type.String(),
  description: Type.String(),
  baseUrl: Url,
  mode: Mode,
  proof: Type.Object({
    hashAlgorithms: Type.Array(Type.String()),
    contentHashPattern: Type.String(),
    signatureAlgorithm: Type.String(),
    canonicalization: Type.String(),
    signedFields: Type.Array(Type.String()),
    activeKeyId: Type.String(),
  }),
  payment: PaymentTerms,
  idempotency: Type.Object({
    field: Type.String(),
    required: Type.Boolean(),
    expires: Type.Boolean(),
    replayHeader: Type.String(),
    reuseStatus: Type.Integer(),
  }),
  limits: Limits,
  authentication: Type.Array(Type.Object({ name: Type.String(), in: Type.String(), header: Type.String() }), {
    description: 'Credential schemes, from the OpenAPI document; public reads need none.',
  }),
  operations: Type.Array(Operation, { description: 'Every JSON operation in /openapi.json.' }),
  documents: Type.Record(Type.String(), Url),
  mcp: McpSetup,
});

const Step = Type.Object({
  step: Type.Integer(),
  title: Type.String(),
  description: Type.String(),
  method: Nullable(Type.String()),
  url: Nullable(Type.String({ description: 'Absolute; `{id}` stands for the proof id.' })),
  body: Nullable(Type.Object({}, { additionalProperties: true })),
  command: Nullable(Type.String({ description: 'The same step as a shell command.' })),
});

export const Quickstart = Type.Object({
  ok: Type.Boolean(),
  service: Type.String(),
  summary: Type.String(),
  mode: Mode,
  baseUrl: Url,
  payment: PaymentTerms,
  steps: Type.Array(Step),
  links: Type.Record(Type.String(), Url),
  mcp: McpSetup,
});
export type Quickstart = Static<typeof Quickstart>;

export const Action = Type.Object({
  name: Type.String({ description: 'A tool name: lowercase with underscores.' }),
  title: Type.String(),
  description: Type.String(),
  method: Type.String(),
  urlTemplate: Type.String({ description: 'An RFC 6570 URI template, expanded with the inputs.' }),
  bodyFromInput: Type.Boolean({
    description: 'When true, the inputs are sent as the JSON body; otherwise they fill the template.',
  }),
  headers: Type.Record(Type.String(), Type.String()),
  inputSchema: JsonSchema,
  example: Type.Object({}, { additionalProperties: true, description: 'A filled-in input.' }),
  paid: Type.Boolean(),
  price: Nullable(Type.String()),
  returns: Type.String(),
});
export type Action = Static<typeof Action>;

export const ActionCatalog = Type.Object({
  ok: Type.Boolean(),
  service: Type.String(),
  baseUrl: Url,
  mode: Mode,
  conventions: Type.Array(Type.String()),
  actions: Type.Array(Action),
});
export type ActionCatalog = Static<typeof ActionCatalog>;

export const TrustSummary = Type.Object({
  ok: Type.Boolean(),
  service: Type.String(),
  version: Type.String(),
  baseUrl: Url,
  proves: Type.Array(Type.String()),
  doesNotProve: Type.Array(Type.String()),
  evidence: Type.Array(Evidence, {
    description:
      'Every kind of evidence a proof carries: what it proves, what not, how to check it without us.',
  }),
  signing: Type.Object({
    algorithm: Type.String(),
    canonicalization: Type.String(),
    signedFields: Type.Array(Type.String()),
    activeKeyId: Type.String(),
    keys: Type.Array(Type.Object({ keyId: Type.String(), createdAt: Type.String(), active: Type.Boolean() })),
    verification: Type.String(),
    verifyUrlTemplate: Type.String(),
  }),
  dataHandling: Type.Object({
    storesContent: Type.Boolean(),
    storesRawMetadata: Type.Boolean(),
    storesRequestHeaders: Type.Boolean(),
    publishedFields: Type.Array(Type.String()),
    idempotencyKeysSearchable: Type.Boolean(),
  }),
  storage: Type.Object({ engine: Type.String(), durability: Type.String(), retention: Type.String() }),
  proofs: Type.Object({ total: Type.Integer(), latestAt: Nullable(Type.String({ format: 'date-time' })) }),
  payment: PaymentTerms,
  security: Type.Object({
    contact: Nullable(Type.String({ description: 'SECURITY_CONTACT as an RFC 9116 URI; null when unset.' })),
    note: Type.String(),
    securityTxt: Nullable(Type.String({ format: 'uri', description: 'Null when no contact is configured.' })),
    policy: Url,
  }),
});
export type TrustSummary = Static<typeof TrustSummary>;

const AnchorEndpoint = Type.Object({
  url: Type.String(),
  kind: Type.Union([Type.Literal('rfc3161'), Type.Literal('opentimestamps')]),
  state: Type.Union([Type.Literal('ok'), Type.Literal('failing'), Type.Literal('unused')], {
    description: '`unused`: not asked yet since it was configured.',
  }),
  consecutiveFailures: Type.Integer(),
  lastSuccessAt: Nullable(Type.String({ format: 'date-time' })),
  lastFailureAt: Nullable(Type.String({ format: 'date-time' })),
  lastError: Nullable(Type.String()),
});
const AnchorsStatus = Type.Object(
  {
    enabled: Type.Boolean(),
    ok: Type.Boolean({
      description: 'False while an authority or calendar fails; proofs are still created.',
    }),
    intervalMs: Type.Optional(Type.Integer()),
    lastAnchoredTreeSize: Type.Optional(Nullable(Type.Integer())),
    lastAnchoredAt: Type.Optional(Nullable(Type.String({ format: 'date-time' }))),
    pendingBitcoin: Type.Optional(
      Type.Integer({ description: 'Calendar submissions that Bitcoin has not attested yet.' }),
    ),
    endpoints: Type.Optional(Type.Array(AnchorEndpoint)),
  },
  { description: 'Outside anchors of the log\'s checkpoints (docs/deploy.md, "Anchors").' },
);

const WitnessStatus = Type.Object({
  name: Type.String({ description: "The witness's key name." }),
  keyId: Type.String({ description: 'Its key id, hex (C2SP tlog-cosignature v1).' }),
  url: Type.String({ description: 'Its submission prefix, without credentials.' }),
  state: Type.Union([Type.Literal('ok'), Type.Literal('failing')], {
    description: '`failing`: its last request failed, or what it answered did not verify.',
  }),
  consecutiveFailures: Type.Integer(),
  lastError: Nullable(Type.String()),
  cosignedSize: Nullable(
    Type.Integer({ description: 'The tree size the witness last said it cosigned; null before it said.' }),
  ),
  lastSuccessAt: Nullable(Type.String({ format: 'date-time' })),
});

export const Status = Type.Object({
  ok: Type.Boolean(),
  service: Type.String(),
  version: Type.String(),
  status: Type.Union([Type.Literal('operational'), Type.Literal('degraded')]),
  launch: Type.Object({
    stage: Type.Union([Type.Literal('demo'), Type.Literal('live')]),
    description: Type.String(),
  }),
  mode: Mode,
  startedAt: Type.String({ format: 'date-time' }),
  uptimeSeconds: Type.Integer(),
  time: Type.String({ format: 'date-time' }),
  components: Type.Object({
    database: Type.Object({ engine: Type.String(), ok: Type.Boolean() }),
    signing: Type.Object({ ok: Type.Boolean(), activeKeyId: Type.String(), keyCount: Type.Integer() }),
    payments: Type.Object({ mode: Mode, ok: Type.Boolean(), network: Nullable(Type.String()) }),
    anchors: AnchorsStatus,
    witnesses: Type.Array(WitnessStatus, {
      description:
        "The witnesses that cosign the log's checkpoints (docs/witnesses.md); empty: none configured.",
    }),
  }),
  proofs: Type.Object({
    total: Nullable(Type.Integer()),
    latestAt: Nullable(Type.String({ format: 'date-time' })),
  }),
});

const Pricing = Type.Object({
  model: Type.Union([Type.Literal('fixed'), Type.Literal('free')]),
  price: Nullable(Type.String()),
  amount: Nullable(Type.String()),
  currency: Nullable(Type.String()),
  protocol: Nullable(Type.String()),
  x402Version: Nullable(Type.Integer()),
  scheme: Nullable(Type.String()),
  network: Nullable(Type.String()),
  payTo: Nullable(Type.String()),
});

export const Listing = Type.Object({
  id: Type.String(),
  name: Type.String(),
  summary: Type.String(),
  category: Type.String(),
  tags: Type.Array(Type.String()),
  endpoint: Type.Object({ method: Type.String(), urlTemplate: Type.String() }),
  pricing: Pricing,
  inputSchema: JsonSchema,
  docs: Url,
});
export type Listing = Static<typeof Listing>;

export const Marketplace = Type.Object({
  ok: Type.Boolean(),
  provider: Type.Object({
    name: Type.String(),
    url: Url,
    description: Type.String(),
    version: Type.String(),
  }),
  mode: Mode,
  listings: Type.Array(Listing),
  links: Type.Record(Type.String(), Url),
});
export type Marketplace = Static<typeof Marketplace>;

const Headline = Type.Object({
  id: Type.String(),
  label: Type.String(),
  contentHash: Type.String(),
  timestamp: Type.String({ format: 'date-time' }),
  createdVia: Type.String({
    description:
      'How the proof was paid for: `demo` (free, in demo mode), `x402` (paid through x402) or `api_key` ' +
      "(an account's API key).",
  }),
  url: Url,
});

export const DashboardSummary = Type.Object({
  ok: Type.Boolean(),
  mode: Mode,
  generatedAt: Type.String({ format: 'date-time' }),
  proofs: Type.Object({
    total: Type.Integer(),
    today: Type.Integer({ description: 'Since 00:00 UTC.' }),
    last7Days: Type.Integer({ description: 'The last seven UTC days, today included.' }),
    byCreatedVia: Type.Object({ demo: Type.Integer(), x402: Type.Integer(), api_key: Type.Integer() }),
    latestAt: Nullable(Type.String({ format: 'date-time' })),
  }),
  daily: Type.Array(Type.Object({ date: Type.String({ format: 'date' }), count: Type.Integer() }), {
    description: 'Proofs per UTC day, oldest first, today last.',
  }),
  recent: Type.Array(Headline, { description: 'The newest proofs, newest first.' }),
});
