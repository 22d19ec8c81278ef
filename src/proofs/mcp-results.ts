import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../context.ts';
import type { AppError } from '../errors.ts';
import type { Proof } from './proof-schemas.ts';
import type { Principal } from './proofs-service.ts';

/** The answers of the MCP endpoint's tools (docs/agents.md, "Remote: /mcp"). */

/** Who a tool call is for and what it carries. */
export interface ToolCaller {
  /** The account of the connection's API key, or the public. */
  principal: Principal;
  /** The call's `params._meta` (an x402 payment rides in it). */
  meta: Record<string, unknown> | undefined;
  /** The log of the HTTP request that carried the call. */
  log: FastifyBaseLogger;
}

/** A tool's answer: its JSON as text and as structured content. */
export function answer(value: Record<string, unknown>): CallToolResult {
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

/** The notarize tool's answer, as the API's. */
export function notarized(ctx: AppContext, proof: Proof, isReplay: boolean): Record<string, unknown> {
  return { ok: true, idempotentReplay: isReplay, proof, links: linksOf(ctx, proof.id) };
}

export function linksOf(ctx: AppContext, id: string): Record<string, string> {
  return {
    proof: `${ctx.config.publicBaseUrl}/proof/${id}`,
    verify: `${ctx.config.publicBaseUrl}/api/verify/proofs/${id}`,
  };
}
