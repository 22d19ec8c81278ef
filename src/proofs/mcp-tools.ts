import type { ValidateFunction } from 'ajv';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../context.ts';
import type { RemoteMcpTool } from '../core/mcp-names.ts';
import { AppError, isAppError } from '../errors.ts';
import { bodyValidators, describeValidationErrors, invalidRequest } from '../http/validation.ts';
import { readItems } from './batch-items.ts';
import { NotarizeBody, ProofIdParams, RecentQuery, SearchQuery } from './proof-schemas.ts';
import { proofNotFound } from './proofs-service.ts';
import { paidNotarize, paymentRequired } from './mcp-payments.ts';
import { answer, linksOf, notarized, toolError, type ToolCaller } from './mcp-results.ts';
import { serverFault } from '../http/error-handler.ts';
import { searchFilterOf } from './proofs-routes.ts';

/** The tools of the service's MCP endpoint (docs/agents.md, "Remote: /mcp"). */
export type RemoteToolName = RemoteMcpTool;

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
          : `Costs ${price} per new proof. Unpaid, it answers the x402 payment terms (PaymentRequired in ` +
            'structuredContent); pay one of "accepts" and call again with the payment in ' +
            '_meta["x402/payment"]: the receipt comes back in _meta["x402/payment-response"]. A retry with the ' +
            'same idempotencyKey answers the same proof and pays nothing. An X-Service-Key header on the ' +
            'connection bills its account instead.'),
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

/**
 * Calls a tool for a caller. In x402 mode a new proof is paid with x402 over MCP (`paidNotarize`),
 * unless the connection's API key bills an account; no proof is ever made unpaid.
 */
export async function callRemoteTool(
  ctx: AppContext,
  name: string,
  args: unknown,
  caller: ToolCaller,
): Promise<CallToolResult> {
  const { principal } = caller;
  try {
    switch (name as RemoteToolName) {
      case 'notarize': {
        const [read] = readItems([args]);
        if (read === undefined || !read.ok) throw read?.error ?? invalidRequest([]);
        ctx.proofs.assertAccepting();
        if (ctx.payments !== undefined && principal.kind !== 'account')
          return await paidNotarize(ctx, ctx.payments, read.item.body, caller);
        const { proof, isReplay } = await ctx.proofs.notarize(read.item.body, principal);
        return answer(notarized(ctx, proof, isReplay));
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
    if (!isAppError(error)) {
      // The caller learns what the API would tell it; the cause goes to the log only.
      const fault = serverFault(error);
      caller.log.error({ err: error, code: fault.code, tool: name }, 'MCP tool call failed');
      return toolError(fault);
    }
    return error.code === 'payment_required' && ctx.payments !== undefined
      ? paymentRequired(ctx.payments, error)
      : toolError(error);
  }
}
