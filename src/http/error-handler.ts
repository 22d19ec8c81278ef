import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError, type ErrorCode } from '../errors.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { describeValidationErrors, invalidRequest } from './validation.ts';

/** Fastify's own error codes and what a client is told about each (docs/api.md, "Errors"). */
const FRAMEWORK_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_json', message: 'The request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    code: 'invalid_json',
    message: 'The request body is empty; send a JSON object',
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'unsupported_media_type',
    message: 'Send the body as application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    code: 'invalid_request',
    message: 'Content-Length does not match the body',
  },
  FST_ERR_CTP_INVALID_TYPE: { code: 'unsupported_media_type', message: 'Send the body as application/json' },
  FST_ERR_BAD_URL: { code: 'invalid_request', message: 'The request URL is malformed' },
  FST_ERR_ASYNC_CONSTRAINT: { code: 'invalid_request', message: 'The request could not be routed' },
};

const BY_STATUS: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'service_unavailable',
};

/** `131072` → `131072 bytes (128 KiB)`. */
function describeBytes(bytes: number): string {
  return bytes >= 2048 && bytes % 1024 === 0 ? `${bytes} bytes (${bytes / 1024} KiB)` : `${bytes} bytes`;
}

/**
 * Turns anything thrown into the AppError a client may see. Nothing internal leaks from a 5xx. A body
 * over its limit is told the limit of its route, which the route (or the server's default) sets.
 */
function toAppError(error: unknown, request: FastifyRequest): AppError {
  if (isAppError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { validationContext?: string };
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = describeBytes(request.routeOptions.bodyLimit);
    return new AppError('payload_too_large', `The request body is too large: at most ${limit}`);
  }
  if (fastifyError.validation) {
    const errors = describeValidationErrors(
      fastifyError.validation,
      fastifyError.validationContext ?? 'body',
    );
    return invalidRequest(errors);
  }
  if (isDatabaseUnavailable(error)) return serverFault(error);
  if (fastifyError.statusCode === 400 && /prototype/i.test(fastifyError.message ?? '')) {
    return new AppError(
      'invalid_json',
      'The JSON body contains a forbidden key (__proto__ or constructor.prototype)',
    );
  }
  const known = fastifyError.code ? FRAMEWORK_ERRORS[fastifyError.code] : undefined;
  if (known) return new AppError(known.code, known.message);
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Anything else the framework or a plugin rejects is the caller's doing; its message is safe to show.
    return new AppError(BY_STATUS[status] ?? 'invalid_request', fastifyError.message ?? 'Invalid request');
  }
  return serverFault(error);
}

/**
 * What a caller is told of a failure that is not its doing: the database is unavailable (retry), or an
 * internal error, whose cause goes to the log only.
 */
export function serverFault(error: unknown): AppError {
  if (isDatabaseUnavailable(error)) {
    return new AppError(
      'service_unavailable',
      'The database is unavailable; retry shortly',
      {},
      { 'Retry-After': '1' },
    );
  }
  return new AppError('internal_error', 'An internal error occurred');
}

function sendError(request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply {
  const appError = toAppError(error, request);
  if (appError.statusCode >= 500) {
    request.log.error({ err: error, code: appError.code }, 'request failed');
    if (appError.code === 'internal_error') appError.details.requestId = request.id;
  }
  for (const [name, value] of Object.entries(appError.headers)) void reply.header(name, value);
  return reply.code(appError.statusCode).type('application/json; charset=utf-8').send(appError.toEnvelope());
}

/** One renderer for every error, including the ones Fastify raises before routing. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new AppError('not_found', `No route for ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}

/**
 * For Fastify's `frameworkErrors` option: bad URLs and similar never reach setErrorHandler, nor the
 * onRequest hooks, so the headers every response carries are set here.
 */
export function frameworkErrorHandler(headers: Record<string, string>) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    void reply.headers(headers).header('X-Request-Id', request.id);
    void sendError(request, reply, error);
  };
}

/**
 * For Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses (a NUL or a bad name in a
 * header, headers over 16 KiB) or one not whole within REQUEST_TIMEOUT_MS never becomes a request. It
 * is answered here in the envelope, with the security headers, and its connection closed.
 */
export function clientErrorHandler(headers: Record<string, string>) {
  return function (this: FastifyInstance, error: ConnectionError, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const appError =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('request_timeout', 'The request did not arrive in time; the connection is closed')
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? new AppError('headers_too_large', 'The request headers are larger than 16 KiB')
          : new AppError('invalid_request', 'The request is not valid HTTP');
    this.log.debug({ err: error, code: appError.code }, 'client error');
    // As Node does: answer only when no response has started on this connection.
    const response = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
    if (socket.writable && response?.headersSent !== true) {
      const body = JSON.stringify(appError.toEnvelope());
      const lines = Object.entries({
        ...headers,
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': String(Buffer.byteLength(body)),
        Connection: 'close',
      }).map(([name, value]) => `${name}: ${value}\r\n`);
      const status = appError.statusCode;
      socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`);
    }
    socket.destroy();
  };
}
