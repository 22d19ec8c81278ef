import type { ValidateFunction } from 'ajv';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../context.ts';
import { AppError, isAppError } from '../errors.ts';
import { bodyValidators, describeValidationErrors, invalidRequest } from '../http/validation.ts';
import { readItems } from './batch-items.ts';
import { NotarizeBody, ProofIdParams, RecentQuery, SearchQuery } from './proof-schemas.ts';
import { proofNotFound, type Principal } from './proofs-service.ts';
import { searchFilterOf } from './proofs-routes.ts';

/** The tools of the service's MCP endpoint (docs/agents.md, "Remote: /mcp"). */
export type RemoteToolName = 'notarize' | 'get_proof' | 'verify_proof' | 'search_proofs' | 'recent_proofs';

/** A plain JSON copy of a TypeBox schema: the API's schema is the tool's input schema. */
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Tool['inputSchema'];

/**
 * The tools, their input schemas taken from the API's, and descriptions written for a model: what the
 * tool proves, what it does not, what it costs, what to keep. No tool declares an output schema: each
 * can answer an error, which such a schema would break.
 */
export function remoteTools(ctx: AppContext): Tool[] {
  const price = ctx.payments?.price;
  return [
    {
      name: 'notarize',
      title: 'Create a timestamped proof of a SHA-256 hash',
      description:
        'Records, signed and timestamped by hashproof, that this SHA-256 hash existed now, and returns the ' +
        'proof. Send only the hash of the content (sha256: and 64 hex digits), never the content; it proves ' +
        'that the hash existed at that time, not who made the content or what it means. The label is public; ' +
        'metadata stays private (only its hash and key names are published). Repeating a call with the same ' +
        'idempotencyKey and content returns the same proof. Keep proof.id: verify_proof and get_proof take it. ' +
        (price === undefined
          ? 'Free on this service (demo mode).'
          : `Costs ${price} per new proof, paid with x402, or billed to the account of the X-Service-Key header of the connection.`),
      inputSchema: plain(NotarizeBody),
    },
    {
      name: 'get_proof',
      title: 'Read a proof',
      description:
        'The public proof document of a proof id (proof_…): its hash, label, time, signatures and place in the log. Free.',
      inputSchema: plain(ProofIdParams),
    },
    {
      name: 'verify_proof',
      title: 'Verify a proof',
      description:
        'Checks a stored proof now: its signature, its Ed25519 receipt, its RFC 3161 token and its inclusion ' +
        'in the transparency log. This is the service checking itself; for evidence that does not trust the ' +
        'service, check the proof file offline (hashproof verify). Free.',
      inputSchema: plain(ProofIdParams),
    },
    {
      name: 'search_proofs',
      title: 'Search proofs',
      description:
        'Finds proofs by content hash, metadata hash, id, account, idempotency key or part of a label, newest ' +
        'first. To learn whether some content was stamped, hash it and search by contentHash. Free.',
      inputSchema: plain(SearchQuery),
    },
    {
      name: 'recent_proofs',
      title: 'List recent proofs',
      description:
        'The newest public proofs, signatures redacted; pass nextCursor as cursor for the next page. Free.',
      inputSchema: plain(RecentQuery),
    },
  ];
}

const validators = new Map<object, ValidateFunction>();

/** The arguments, checked against the tool's schema as the API checks a body (no coercion). */
function checked<T>(schema: object, args: unknown): T {
  let validate = validators.get(schema);
  if (validate === undefined) {
    validate = bodyValidators().compile(schema);
    validators.set(schema, validate);
  }
  if (!validate(args)) throw invalidRequest(describeValidationErrors(validate.errors ?? [], 'body'));
  return args as T;
}

/** A tool's answer: its JSON as text and as structured content. */
function answer(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

/** A refused call: a tool error carrying the API's error envelope. */
export function toolError(error: AppError): CallToolResult {
  const envelope = error.toEnvelope();
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(envelope) }],
    structuredContent: envelope as unknown as Record<string, unknown>,
  };
}

/**
 * Calls a tool for `principal` (the account of the connection's API key, or the public in demo mode).
 * In x402 mode a new proof without an API key is refused with `payment_required`: paying over MCP is
 * not offered yet, and no proof is ever made unpaid.
 */
export async function callRemoteTool(
  ctx: AppContext,
  name: string,
  args: unknown,
  principal: Principal,
): Promise<CallToolResult> {
  try {
    switch (name as RemoteToolName) {
      case 'notarize': {
        const [read] = readItems([args]);
        if (read === undefined || !read.ok) throw read?.error ?? invalidRequest([]);
        if (ctx.payments !== undefined && principal.kind !== 'account') {
          throw new AppError(
            'payment_required',
            `A new proof costs ${ctx.payments.price} on this service: send an API key with the scope proofs:write in the X-Service-Key header of the MCP connection, or use POST /api/proof/notarize with x402`,
            { resource: ctx.payments.resourceUrl },
          );
        }
        ctx.proofs.assertAccepting();
        const { proof, isReplay } = await ctx.proofs.notarize(read.item.body, principal);
        return answer({ ok: true, idempotentReplay: isReplay, proof, links: linksOf(ctx, proof.id) });
      }
      case 'get_proof': {
        const { id } = checked<{ id: string }>(ProofIdParams, args);
        const proof = await ctx.proofs.get(id);
        if (proof === undefined) throw proofNotFound(id);
        return answer({ ok: true, proof, links: linksOf(ctx, id) });
      }
      case 'verify_proof': {
        const { id } = checked<{ id: string }>(ProofIdParams, args);
        const result = await ctx.proofs.verify(id);
        if (result === undefined) throw proofNotFound(id);
        const { proof, report } = result;
        return answer({
          ok: true,
          proofId: proof.id,
          verified: report.verified,
          checks: report.checks,
          signingMessage: report.signingMessage,
          checkedAt: new Date(ctx.clock.now()).toISOString(),
        });
      }
      case 'search_proofs': {
        const query = checked<SearchQuery>(SearchQuery, args);
        const limit = query.limit ?? 20;
        return answer({
          ok: true,
          limit,
          ...(await ctx.proofs.list(searchFilterOf(query), limit, query.cursor)),
        });
      }
      case 'recent_proofs': {
        const query = checked<RecentQuery>(RecentQuery, args);
        const limit = query.limit ?? 20;
        return answer({ ok: true, limit, ...(await ctx.proofs.list({}, limit, query.cursor)) });
      }
      default:
        throw new AppError('not_found', `No tool named ${JSON.stringify(name)}`, { tool: name });
    }
  } catch (error) {
    if (isAppError(error)) return toolError(error);
    throw error;
  }
}

function linksOf(ctx: AppContext, id: string): Record<string, string> {
  return {
    proof: `${ctx.config.publicBaseUrl}/proof/${id}`,
    verify: `${ctx.config.publicBaseUrl}/api/verify/proofs/${id}`,
  };
}
