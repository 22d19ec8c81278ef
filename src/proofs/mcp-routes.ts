import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  PingRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { AppContext } from '../context.ts';
import { MCP_PATH } from '../core/mcp-names.ts';
import { AppError } from '../errors.ts';
import { errorResponses } from '../http/openapi.ts';
import { SERVICE_VERSION } from '../version.ts';
import { callRemoteTool, remoteTools } from './mcp-tools.ts';
import type { ToolCaller } from './mcp-results.ts';
import type { Principal } from './proofs-service.ts';

/** Open sessions at most: a new one past this is refused (503) until idle ones expire. */
const MAX_SESSIONS = 1000;
/** Open sessions at most per client address: one address cannot take the others' sessions. */
const MAX_SESSIONS_PER_ADDRESS = 20;
/** A session unused this long is closed; its client starts a new one (the protocol's 404 tells it). */
const SESSION_IDLE_MS = 10 * 60_000;

/** The key of the caller in the auth info a request hands its tool calls. */
const CALLER = 'hashproof.caller';

interface Session {
  transport: StreamableHTTPServerTransport;
  server: Server;
  lastUsedMs: number;
  /** The address of the client that opened it. */
  address: string;
}

/**
 * The requests each session's server answers, by their method only (made once: a schema is dozens of
 * closures); each handler checks the rest itself with `checked`.
 */
const BY_METHOD = {
  ping: PingRequestSchema.pick({ method: true }).passthrough(),
  listTools: ListToolsRequestSchema.pick({ method: true }).passthrough(),
  callTool: CallToolRequestSchema.pick({ method: true }).passthrough(),
};

/** A request as its schema reads it; one that does not fit is refused as the protocol's Invalid params. */
function checked<T>(
  schema: {
    safeParse(value: unknown): {
      success: boolean;
      data?: T;
      error?: { issues: { path: PropertyKey[]; message: string }[] };
    };
  },
  request: unknown,
): T {
  const result = schema.safeParse(request);
  if (!result.success || result.data === undefined) {
    const issues = (result.error?.issues ?? []).map(
      (issue) => `/${issue.path.map(String).join('/')}: ${issue.message}`,
    );
    throw new McpError(ErrorCode.InvalidParams, `Invalid params: ${issues.join('; ')}`);
  }
  return result.data;
}

/** Who a call of this HTTP request is for: the verified API key's account, else the public. */
const principalOf = (request: FastifyRequest): Principal =>
  request.apiKey?.scopes.includes('proofs:write')
    ? { kind: 'account', accountId: request.apiKey.accountId }
    : { kind: 'public' };

/**
 * The service's Model Context Protocol endpoint (Streamable HTTP, docs/agents.md): sessions per the
 * protocol, kept in memory and bounded (a restart loses the open sessions and nothing else), the same
 * hooks as every route (rate limit, API key, body limit, access log). Each request's own API key
 * decides who its tool calls are for.
 */
export async function mcpRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  const sessions = new Map<string, Session>();
  const tools = remoteTools(ctx);
  // One for all sessions: the SDK otherwise makes an Ajv instance per server (some 17 KB a session).
  const jsonSchemaValidator = new AjvJsonSchemaValidator();

  const newServer = () => {
    const server = new Server(
      { name: 'hashproof', version: SERVICE_VERSION },
      {
        capabilities: { tools: {} },
        jsonSchemaValidator,
        instructions:
          'hashproof makes signed, timestamped proofs that a SHA-256 hash existed. Hash your content ' +
          'yourself and call notarize with the hash; keep proof.id to verify or cite it later.',
      },
    );
    // Each handler is registered under a schema that names only its method and checks the request
    // itself: the SDK answers a request its own schema refuses with -32603 (Internal error), where the
    // protocol's answer to bad params is -32602.
    server.setRequestHandler(BY_METHOD.ping, (request) => {
      checked(PingRequestSchema, request);
      return {};
    });
    server.setRequestHandler(BY_METHOD.listTools, (request) => {
      checked(ListToolsRequestSchema, request);
      return { tools };
    });
    server.setRequestHandler(BY_METHOD.callTool, (raw, extra) => {
      const request = checked(CallToolRequestSchema, raw);
      if (!tools.some((tool) => tool.name === request.params.name))
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
      // Who the call is for is the HTTP request's that carried it (its API key), handed over as the
      // transport's auth info.
      const caller = extra.authInfo?.extra?.[CALLER] as Omit<ToolCaller, 'meta'> | undefined;
      return callRemoteTool(ctx, request.params.name, request.params.arguments ?? {}, {
        principal: caller?.principal ?? { kind: 'public' },
        log: caller?.log ?? app.log,
        meta: request.params._meta,
      });
    });
    return server;
  };

  /** Open (or opening) sessions by client address. */
  const byAddress = new Map<string, number>();
  const release = (address: string) => {
    const left = (byAddress.get(address) ?? 1) - 1;
    if (left > 0) byAddress.set(address, left);
    else byAddress.delete(address);
  };
  /** Ends the bookkeeping of a session, once, however it ends. */
  const forget = (id: string) => {
    const session = sessions.get(id);
    if (session === undefined) return;
    sessions.delete(id);
    release(session.address);
  };

  const sweep = (nowMs: number) => {
    for (const [id, session] of sessions) {
      if (nowMs - session.lastUsedMs > SESSION_IDLE_MS) {
        forget(id);
        void session.transport.close();
      }
    }
  };

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    // JSON-RPC refuses an empty batch; the transport would accept it (202) as if it held notifications.
    if (Array.isArray(request.body) && request.body.length === 0)
      throw new AppError('invalid_request', 'An empty batch: send a JSON-RPC message', {});
    const id = request.headers['mcp-session-id'];
    const nowMs = ctx.clock.now();
    let session = typeof id === 'string' ? sessions.get(id) : undefined;
    /** A session this request opens: counted for its address until it is known or refused. */
    let opening: Session | undefined;
    // Only an initialize request starts a session: anything else without one is refused below (400),
    // whether or not the sessions are at their cap, and costs no server.
    const body: unknown = request.body;
    const initializing = Array.isArray(body) ? body.some(isInitializeRequest) : isInitializeRequest(body);
    if (session === undefined && id === undefined && request.method === 'POST' && initializing) {
      sweep(nowMs);
      if (sessions.size >= MAX_SESSIONS) {
        throw new AppError(
          'service_unavailable',
          `Too many open MCP sessions (${MAX_SESSIONS}); retry later, or end yours with DELETE ${MCP_PATH}`,
          {},
          { 'Retry-After': '60' },
        );
      }
      const open = byAddress.get(request.ip) ?? 0;
      if (open >= MAX_SESSIONS_PER_ADDRESS) {
        throw new AppError(
          'rate_limited',
          `This address has ${open} open MCP sessions, the most it may have: end one with DELETE ${MCP_PATH}, or wait until one has been idle for ${SESSION_IDLE_MS / 60_000} minutes`,
          { openSessions: open, limit: MAX_SESSIONS_PER_ADDRESS },
          { 'Retry-After': '60' },
        );
      }
      byAddress.set(request.ip, open + 1);
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created);
        },
        onsessionclosed: (sessionId) => forget(sessionId),
      });
      const server = newServer();
      const created: Session = { transport, server, lastUsedMs: nowMs, address: request.ip };
      await server.connect(transport);
      session = created;
      opening = created;
    }
    if (session === undefined && id === undefined) {
      throw new AppError(
        'invalid_request',
        `Send the header Mcp-Session-Id of your session (POST ${MCP_PATH} an initialize request to start one)`,
        {},
      );
    }
    if (session === undefined) {
      // The protocol's answer to an unknown or expired session: 404, and the client starts anew.
      throw new AppError('not_found', 'No such MCP session (it ended or expired); initialize a new one', {});
    }
    session.lastUsedMs = nowMs;
    const caller: Omit<ToolCaller, 'meta'> = { principal: principalOf(request), log: request.log };
    (request.raw as IncomingMessage & { auth?: AuthInfo }).auth = {
      token: '',
      clientId: caller.principal.kind === 'account' ? caller.principal.accountId : 'public',
      scopes: request.apiKey?.scopes ?? [],
      extra: { [CALLER]: caller },
    };
    // The transport writes the answer itself: the headers every answer carries (request id, security
    // headers, rate limit) go with it.
    for (const [name, value] of Object.entries(reply.getHeaders()))
      if (value !== undefined) reply.raw.setHeader(name, value);
    reply.hijack();
    try {
      await session.transport.handleRequest(request.raw, reply.raw, request.body);
    } finally {
      // An initialize the transport refused opened nothing: its address gets its place back.
      if (opening !== undefined && opening.transport.sessionId === undefined) release(opening.address);
    }
  };

  const schema = {
    summary:
      'Model Context Protocol endpoint (Streamable HTTP): tools notarize, get_proof, verify_proof, search_proofs, recent_proofs',
    description:
      'JSON-RPC 2.0 messages of the Model Context Protocol (docs/agents.md). POST carries requests, GET ' +
      "opens the session's event stream, DELETE ends the session (header Mcp-Session-Id). Refusals of the " +
      'transport are JSON-RPC errors; refused tool calls are tool errors carrying the error envelope.',
    tags: ['agents'],
    response: {
      200: {
        description: 'The JSON-RPC answer (application/json), or for GET the event stream',
        type: 'object',
        additionalProperties: true,
      },
      ...errorResponses(400, 404, 413, 429, 503),
    },
  };
  app.post(MCP_PATH, { schema }, handle);
  app.get(MCP_PATH, { schema }, handle);
  app.delete(MCP_PATH, { schema }, handle);
  app.addHook('onClose', async () => {
    for (const session of sessions.values()) await session.transport.close();
    sessions.clear();
    byAddress.clear();
  });
}
