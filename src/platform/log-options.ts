import type { Logger, LoggerOptions } from 'pino';

/** The service's logger (pino): what every part that writes log lines is given. */
export type { Logger };

/** Headers that carry secrets: never written to a log line. */
const REDACTED_HEADERS = [
  'x-service-admin-key',
  'x-service-key',
  'authorization',
  'cookie',
  'payment-signature',
];

const MAX_MESSAGE_CHARS = 300;
const MAX_STACK_FRAMES = 20;
const MAX_DEPTH = 3;

/**
 * What an error may put in a log line: its type, code, message and stack frames. pino's own serializer
 * copies every enumerable property, and errors carry request data in theirs: Node's parser errors hold
 * the raw bytes of the request (`rawPacket`, credentials included), database and HTTP client errors the
 * query, its parameters or the request they failed on.
 */
function serializeError(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) {
    return typeof value === 'object' && value !== null
      ? { type: value.constructor?.name ?? 'Object' }
      : clean(String(value));
  }
  const error = value as Error & { code?: unknown; statusCode?: unknown; errors?: unknown };
  const type = error.constructor?.name ?? error.name;
  const message = clean(error.message);
  const frames = (error.stack ?? '')
    .split('\n')
    .filter((line) => line.startsWith('    at '))
    .slice(0, MAX_STACK_FRAMES);
  const safe: Record<string, unknown> = {
    type,
    message,
    stack: [`${type}: ${message}`, ...frames].join('\n'),
  };
  if (typeof error.code === 'string' || typeof error.code === 'number') safe.code = clean(String(error.code));
  if (typeof error.statusCode === 'number') safe.statusCode = error.statusCode;
  if (depth < MAX_DEPTH) {
    if (error.cause !== undefined) safe.cause = serializeError(error.cause, depth + 1);
    if (Array.isArray(error.errors))
      safe.errors = error.errors.slice(0, 5).map((inner) => serializeError(inner, depth + 1));
  }
  return safe;
}

/** Control characters escaped (a message is one line of text) and the length bounded. */
function clean(text: string): string {
  const escaped = text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return escaped.length > MAX_MESSAGE_CHARS ? `${escaped.slice(0, MAX_MESSAGE_CHARS)}…` : escaped;
}

/** The options of every logger of the service: errors through `serializeError`, secret headers redacted. */
export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    serializers: { err: serializeError, error: serializeError },
    redact: { paths: REDACTED_HEADERS.map((h) => `req.headers["${h}"]`), censor: '[redacted]' },
  };
}
