import type { Static } from 'typebox';
import { sha256Hex } from '../core/hashing.ts';
import { CONTENT_HASH_PATTERN } from '../core/field-rules.ts';
import { BatchBody, NotarizeBody, Proof, RecentQuery, SearchQuery } from '../proofs/proof-schemas.ts';
import type { ActionCatalog, Capabilities, Quickstart } from './document-schemas.ts';
import {
  authenticationOf,
  BATCH_PATH,
  documentLinks,
  NOTARIZE_PATH,
  operationsOf,
  plainSchema,
  queryTemplate,
  SERVICE_NAME,
  SERVICE_SUMMARY,
  signedFields,
  type Facts,
} from './facts.ts';
import { mcpSetup } from './mcp-setup.ts';

/** Builders of the agents' documents: /api/capabilities, /api/quickstart, /api/actions (docs/pages.md). */

/** The example request used by the quickstart, the action catalog and the pages: a real hash of real text. */
function exampleRequest(): { contentHash: string; label: string; idempotencyKey: string } {
  return {
    contentHash: `sha256:${sha256Hex('hello world')}`,
    label: 'hello world',
    idempotencyKey: 'quickstart-hello-world',
  };
}

export interface ProofEndpoint {
  method: string;
  urlTemplate: string;
  inputSchema: Record<string, unknown>;
}

/**
 * Where the JSON operations on proofs are and what each takes, as both the action catalog and the
 * marketplace (service-documents.ts) describe them.
 */
export function proofEndpoints(
  facts: Facts,
): Record<'notarize' | 'batch' | 'verify' | 'search', ProofEndpoint> {
  return {
    batch: {
      method: 'POST',
      urlTemplate: facts.url(BATCH_PATH),
      inputSchema: {
        ...plainSchema(BatchBody),
        properties: {
          items: { ...plainSchema(BatchBody.properties.items), items: plainSchema(NotarizeBody) },
        },
      },
    },
    notarize: {
      method: 'POST',
      urlTemplate: facts.url(NOTARIZE_PATH),
      inputSchema: plainSchema(NotarizeBody),
    },
    verify: {
      method: 'GET',
      urlTemplate: facts.url('/api/verify/proofs/{id}'),
      inputSchema: {
        type: 'object',
        required: ['id'],
        properties: { id: plainSchema(Proof.properties.id) },
      },
    },
    search: {
      method: 'GET',
      urlTemplate: facts.url('/api/proofs/search') + queryTemplate(SearchQuery),
      inputSchema: plainSchema(SearchQuery),
    },
  };
}

export function buildCapabilities(facts: Facts, openapi: unknown): Static<typeof Capabilities> {
  const { ctx, terms } = facts;
  return {
    ok: true,
    service: SERVICE_NAME,
    version: facts.version,
    description: SERVICE_SUMMARY,
    baseUrl: facts.url(''),
    mode: terms.mode,
    proof: {
      hashAlgorithms: ['sha256'],
      contentHashPattern: CONTENT_HASH_PATTERN,
      signatureAlgorithm: 'hmac-sha256',
      canonicalization: 'RFC 8785 (JCS)',
      signedFields: signedFields(),
      activeKeyId: ctx.keyring.active.keyId,
    },
    payment: terms,
    idempotency: {
      field: 'idempotencyKey',
      required: true,
      expires: false,
      replayHeader: 'Idempotent-Replayed',
      reuseStatus: 422,
    },
    limits: facts.limits,
    authentication: authenticationOf(openapi),
    operations: operationsOf(openapi, terms),
    documents: documentLinks(facts),
    mcp: mcpSetup(facts),
  };
}

export function buildQuickstart(facts: Facts): Static<typeof Quickstart> {
  const { terms } = facts;
  const example = exampleRequest();
  const notarizeUrl = facts.url(NOTARIZE_PATH);
  const payment = terms.required
    ? `This instance charges ${terms.price} per proof through x402 (version ${terms.x402Version}, scheme ` +
      `${terms.scheme}, ${terms.network}): an unpaid call answers 402 with a PAYMENT-REQUIRED header; pay ` +
      `it with an x402 client and repeat the call with the PAYMENT-SIGNATURE header. Terms: ${terms.discoveryUrl}.`
    : 'This instance runs in demo mode: the proof is created at once, without payment.';
  return {
    ok: true,
    service: SERVICE_NAME,
    summary: SERVICE_SUMMARY,
    mode: terms.mode,
    baseUrl: facts.url(''),
    payment: terms,
    steps: [
      {
        step: 1,
        title: 'Hash your content locally',
        description:
          'Compute the SHA-256 of your file or result on your side and write it as `sha256:` followed by ' +
          '64 hex digits. Never send the content itself.',
        method: null,
        url: null,
        body: null,
        command: `echo "sha256:$(sha256sum FILE | cut -d' ' -f1)"`,
      },
      {
        step: 2,
        title: 'Create a proof',
        description:
          `POST the hash, a public label (1 to ${facts.limits.labelMaxLength} characters), optional ` +
          `non-secret metadata (at most ${facts.limits.metadataMaxBytes} bytes; only its hash and key ` +
          'names are published) and an idempotency key you choose. A retry with the same key and content ' +
          `returns the same proof with idempotentReplay: true. ${payment}`,
        method: 'POST',
        url: notarizeUrl,
        body: example,
        command:
          `curl -s ${notarizeUrl} -H 'content-type: application/json' ` + `-d '${JSON.stringify(example)}'`,
      },
      {
        step: 3,
        title: 'Verify it',
        description:
          'Keep proof.id from the answer. The verification report recomputes the signature now and shows ' +
          'the exact signed message.',
        method: 'GET',
        url: facts.url('/api/verify/proofs/{id}'),
        body: null,
        command: `curl -s ${facts.url('/api/verify/proofs/')}$PROOF_ID`,
      },
      {
        step: 4,
        title: 'Cite it',
        description:
          'Link the public page of the proof, or embed its SVG badge, for example in a README: ' +
          `[![hashproof](${facts.url('/proof/{id}/badge.svg')})](${facts.url('/proof/{id}')})`,
        method: 'GET',
        url: facts.url('/proof/{id}'),
        body: null,
        command: null,
      },
      {
        step: 5,
        title: 'Many files at once',
        description:
          `Send up to ${facts.limits.batch.maxItems} such bodies in one request as { "items": [...] }: each ` +
          'item is answered as the single call would answer it, in the same order, with its RFC 3161 token ' +
          `inline. It counts one request per ${facts.limits.batch.itemsPerRequest} items against the rate limit` +
          (terms.required ? `, and costs ${terms.price} per item not already answered.` : '.') +
          ' The command line does this for a directory: hashproof stamp DIR.',
        method: 'POST',
        url: facts.url(BATCH_PATH),
        body: { items: [example] },
        command:
          `curl -s ${facts.url(BATCH_PATH)} -H 'content-type: application/json' ` +
          `-d '${JSON.stringify({ items: [example] })}'`,
      },
      {
        step: 6,
        title: 'Find proofs of a hash',
        description: 'Anyone holding the content can hash it and look for proofs of it.',
        method: 'GET',
        url: facts.url(`/api/proofs/search?contentHash=${example.contentHash}`),
        body: null,
        command: `curl -s '${facts.url(`/api/proofs/search?contentHash=${example.contentHash}`)}'`,
      },
    ],
    links: documentLinks(facts),
    mcp: mcpSetup(facts),
  };
}

/** `exampleId` is the newest proof's id, so the examples of the read actions work as they are. */
export function buildActionCatalog(facts: Facts, newestProofId: string | null): Static<typeof ActionCatalog> {
  const { terms } = facts;
  const endpoints = proofEndpoints(facts);
  const idInput = {
    ...endpoints.verify.inputSchema,
    properties: { id: { ...plainSchema(Proof.properties.id), description: 'The proof id, `proof_…`.' } },
    additionalProperties: false,
  };
  const exampleId = newestProofId ?? facts.ctx.ids.next('proof', facts.ctx.clock.now());
  const free = { paid: false, price: null, headers: {} };
  return {
    ok: true,
    service: SERVICE_NAME,
    baseUrl: facts.url(''),
    mode: terms.mode,
    conventions: [
      'Expand urlTemplate (RFC 6570) with the inputs; when bodyFromInput is true, send the inputs as the JSON body instead.',
      'Every error is JSON: { "error": { "code", "message", "details" } }; details.errors lists each invalid field.',
      'Retry a failed create_proof with the same idempotencyKey and content: you get the same proof, never a duplicate.',
      ...(facts.limits.rateLimit
        ? [
            `At most ${facts.limits.rateLimit.max} requests per ${facts.limits.rateLimit.windowSeconds} s per client; ` +
              'a 429 carries Retry-After.',
          ]
        : []),
    ],
    actions: [
      {
        name: 'create_proof',
        title: 'Create a timestamped proof of a SHA-256 hash',
        description:
          'Records that the hash existed now and signs it. Send only the hash of your content, never the content.' +
          (terms.required
            ? ` Costs ${terms.price}, paid with x402 (see ${terms.discoveryUrl}).`
            : ' Free in demo mode.'),
        ...endpoints.notarize,
        bodyFromInput: true,
        headers: { 'content-type': 'application/json' },
        example: { ...exampleRequest(), metadata: { source: 'quickstart' } },
        paid: terms.required,
        price: terms.price,
        returns:
          '{ ok, mode, idempotentReplay, proof, links }: keep proof.id; links.proof is the public page.',
      },
      {
        name: 'create_proofs',
        title: 'Create up to 1,000 proofs in one request',
        description:
          'Each item is a create_proof input, answered as create_proof would answer it, in the same order; ' +
          'one bad item fails only itself. Each proof comes with its RFC 3161 token inline.' +
          (terms.required
            ? ` Costs ${terms.price} per item not already answered, paid with x402 in one payment.`
            : ' Free in demo mode.'),
        ...endpoints.batch,
        bodyFromInput: true,
        headers: { 'content-type': 'application/json' },
        example: { items: [{ ...exampleRequest(), metadata: { source: 'quickstart' } }] },
        paid: terms.required,
        price: terms.price,
        returns:
          '{ ok, mode, items: [{ ok, idempotentReplay, proof, links, evidence: { timestampToken } } or { ok: false, error }] }',
      },
      {
        name: 'verify_proof',
        title: 'Verify a proof',
        description: 'Recomputes the signature of a stored proof now and reports whether it is valid.',
        ...endpoints.verify,
        bodyFromInput: false,
        inputSchema: idInput,
        example: { id: exampleId },
        ...free,
        returns: '{ ok, proofId, verified, checks, keyId, signingMessage, checkedAt, proof }',
      },
      {
        name: 'get_proof',
        title: 'Read a proof',
        description: 'The public proof document.',
        method: 'GET',
        urlTemplate: facts.url('/api/proofs/{id}'),
        bodyFromInput: false,
        inputSchema: idInput,
        example: { id: exampleId },
        ...free,
        returns: '{ ok, proof, links }; 404 not_found for an unknown id',
      },
      {
        name: 'search_proofs',
        title: 'Search proofs',
        description:
          'Find proofs by content hash, metadata hash, id, account, idempotency key or part of a label. Newest first.',
        ...endpoints.search,
        bodyFromInput: false,
        example: { contentHash: exampleRequest().contentHash, limit: 5 },
        ...free,
        returns: '{ ok, proofs, limit, nextCursor }; pass nextCursor as cursor for the next page',
      },
      {
        name: 'list_recent_proofs',
        title: 'List recent proofs',
        description: 'The newest public proofs, signatures redacted.',
        method: 'GET',
        urlTemplate: facts.url('/api/proofs/recent') + queryTemplate(RecentQuery),
        bodyFromInput: false,
        inputSchema: plainSchema(RecentQuery),
        example: { limit: 10 },
        ...free,
        returns: '{ ok, proofs, limit, nextCursor }',
      },
    ],
  };
}
