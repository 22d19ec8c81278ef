import type { TObject } from 'typebox';
import type { LocalMcpTool } from '../../core/mcp-names.ts';

/**
 * The tools of `hashproof mcp` as an agent host lists them: each name, a description written for a
 * model (what the tool proves, what it does not, what it costs, what to keep) and its input schema.
 * Inputs the service takes are the API's own schemas (the TypeBox schemas of its routes), so the tools
 * and the HTTP API cannot drift apart; only what exists on this machine alone (a path) is declared here.
 * No tool declares an output schema: every tool can answer an error envelope (payment required among
 * them), and the SDK's client checks error results against an output schema too.
 */

/** The API's schemas the tools take their inputs from (src/proofs/proof-schemas.ts). */
export interface ApiSchemas {
  notarizeBody: TObject;
  searchQuery: TObject;
  proofIdParams: TObject;
}

/** A JSON Schema of an object, as `tools/list` carries it. */
export interface ObjectSchema {
  type: 'object';
  properties: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
}

export interface ToolDefinition {
  name: ToolName;
  title: string;
  description: string;
  inputSchema: ObjectSchema;
  annotations: { readOnlyHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

/** The names, shared with the documents that advertise this server (core/mcp-names.ts). */
export type ToolName = LocalMcpTool;

/** A TypeBox schema as plain JSON Schema: its TypeBox-only markers (symbol keys) left out. */
function jsonSchemaOf(schema: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

/** An object schema of the API, plain, with a description of a field added where the API has none. */
function objectSchemaOf(schema: TObject, descriptions: Record<string, string> = {}): ObjectSchema {
  const plain = jsonSchemaOf(schema) as ObjectSchema;
  for (const [field, description] of Object.entries(descriptions)) {
    const property = plain.properties[field] as Record<string, unknown> | undefined;
    if (property !== undefined && property.description === undefined) property.description = description;
  }
  return plain;
}

/** One property of an API schema, plain (`label` of the notarize body …). */
function propertyOf(schema: TObject, field: string): Record<string, unknown> {
  const properties = jsonSchemaOf(schema).properties as Record<string, Record<string, unknown>> | undefined;
  const found = properties?.[field];
  if (found === undefined) throw new Error(`the API schema has no field ${field}`);
  return found;
}

const COST =
  'Cost: in x402 mode each new proof is paid (the price on the service /pricing, $0.005 by default) from ' +
  'the wallet of HASHPROOF_WALLET_KEY, or billed to the account of HASHPROOF_API_KEY; without either, the ' +
  'answer is an error with code payment_required. A repeat with the same idempotency key answers the ' +
  'same proof again and is never paid twice. In demo mode proofs are free.';

const PROVES =
  'A proof shows that this exact SHA-256 hash existed at the proof timestamp (signed by the service, with ' +
  'an RFC 3161 time-stamp token and a place in an append-only public log). It does NOT prove who wrote ' +
  'the content, that the content is true, or that it did not exist earlier; and it does not store the ' +
  'content: only its hash leaves this machine. The label and the metadata key names are public.';

/** The tools, their inputs taken from the API's schemas. */
export function toolDefinitions(api: ApiSchemas): ToolDefinition[] {
  const readOnly = { readOnlyHint: true, idempotentHint: true, openWorldHint: true };
  const creates = { readOnlyHint: false, idempotentHint: true, openWorldHint: true };
  return [
    {
      name: 'stamp_file',
      title: 'Stamp a file',
      description:
        'Hashes a local file (SHA-256, on this machine; the file itself is never sent), creates a ' +
        'timestamped proof of that hash, and writes the proof file <path>.proof.json beside it, which ' +
        'verify_file checks offline later. The idempotency key is derived from the hash and the label, ' +
        'so stamping the same file again answers the proof already made. ' +
        PROVES +
        ' ' +
        COST +
        ' Keep: the proof file next to the file (both are needed to verify), and the proof id and url ' +
        'of the answer.',
      inputSchema: {
        type: 'object',
        properties: {
          path: {
            type: 'string',
            minLength: 1,
            description:
              'The file to stamp: absolute, or relative to the directory the server runs in. One regular file.',
          },
          label: {
            ...propertyOf(api.notarizeBody, 'label'),
            description: 'A short public title (default: the file name). One line, 1 to 120 characters.',
          },
          metadata: propertyOf(api.notarizeBody, 'metadata'),
        },
        required: ['path'],
        additionalProperties: false,
      },
      annotations: creates,
    },
    {
      name: 'stamp_hash',
      title: 'Stamp a hash',
      description:
        'Creates a timestamped proof of a SHA-256 hash the caller computed (the API notarize call), and ' +
        'answers the proof with the addresses of its public page and verification report. Writes no ' +
        'file: to check it later keep the whole answer, or use stamp_file for a file on this machine. ' +
        PROVES +
        ' ' +
        COST +
        ' Choose the idempotency key per piece of content (a retry with the same key answers the same ' +
        'proof, idempotentReplay true; the same key with another hash is an error). Keep: proof.id.',
      inputSchema: objectSchemaOf(api.notarizeBody),
      annotations: creates,
    },
    {
      name: 'verify_file',
      title: 'Verify a file against its proof',
      description:
        'Checks a local file against its proof file (by default <path>.proof.json) as `hashproof verify` ' +
        'does, and answers the verdict: verified true only when every required check holds with keys ' +
        'this machine trusts (the hash matches, the receipt signature, the RFC 3161 token, the log ' +
        'inclusion once the proof is in the log, any anchors), with each check and the problems. The ' +
        'trusted keys are the ones remembered for the service at its first online contact (stamp_file ' +
        'remembers them); keys inside a proof file are never trusted. Offline by default and free; ' +
        'online also asks the service to confirm the proof and saves its anchors into the proof file. ' +
        'A verdict of not verified is an answer, not an error.',
      inputSchema: {
        type: 'object',
        properties: {
          path: {
            type: 'string',
            minLength: 1,
            description: 'The file to check: absolute, or relative to the directory the server runs in.',
          },
          proofFile: {
            type: 'string',
            minLength: 1,
            description: 'Its proof file, when not <path>.proof.json.',
          },
          online: {
            type: 'boolean',
            description:
              'Also ask the service: it confirms its signature, its log must extend every checkpoint seen before, and anchors found are saved. Default false.',
          },
          witnesses: {
            type: 'array',
            items: { type: 'string', minLength: 1 },
            minItems: 1,
            maxItems: 32,
            description:
              "Verifier keys of witnesses the user trusts (<name>+<key id>+<key>, C2SP tlog-cosignature): the proof's log checkpoint then counts only with their cosignatures (verified false otherwise, naming who is missing). Only keys the user gave, never keys read from a proof or a page.",
          },
          witnessQuorum: {
            type: 'integer',
            minimum: 1,
            description: 'How many of the witnesses must have cosigned (default: all of them).',
          },
        },
        required: ['path'],
        additionalProperties: false,
      },
      // Online, it may save anchors into the proof file.
      annotations: { readOnlyHint: false, idempotentHint: true, openWorldHint: true },
    },
    {
      name: 'get_proof',
      title: 'Get a proof',
      description:
        'Answers a stored proof by its id (proof_ and 26 characters) with the addresses of its public ' +
        'page and verification report; an unknown id is an error with code not_found. Reading is free. ' +
        'It shows what the service holds, which is not an offline verification: use verify_file for a ' +
        'file and its proof file.',
      inputSchema: objectSchemaOf(api.proofIdParams, { id: 'The proof id, as proof.id of a stamp answer.' }),
      annotations: readOnly,
    },
    {
      name: 'search_proofs',
      title: 'Search proofs',
      description:
        'Finds public proofs, newest first: by q (an exact id, content hash, metadata hash or account ' +
        'id, or part of a label), or by one exact field (contentHash, metadataHash, accountId, ' +
        'idempotencyKey). A page holds at most limit proofs; pass nextCursor as cursor for the next. ' +
        'Free. A proof found for a hash shows that hash was stamped then, by whoever holds that proof: ' +
        'not who holds the content.',
      inputSchema: objectSchemaOf(api.searchQuery),
      annotations: readOnly,
    },
  ];
}
