/**
 * The service under hostile input, and the hostile values the tests draw: a test file calls
 * `withHostileTarget()` once; `server` and its documented `operations` are set for its tests.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ADMIN_KEY, api, type ApiResponse, startServer, type TestServer } from '../test/helper.ts';

export let server: TestServer;
/** Every operation `/openapi.json` documents. */
export let operations: { method: string; path: string }[] = [];

/** Starts the service and reads its operations before the file's tests; stops it after. */
export function withHostileTarget(): void {
  before(async () => {
    // A random Content-Length longer than the body sent stalls the request: the timeout ends it quickly.
    server = await startServer({ env: { SERVICE_ADMIN_KEY: ADMIN_KEY, REQUEST_TIMEOUT_MS: '1000' } });
    const doc = (await api(server.baseUrl, '/openapi.json')).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path })),
    );
  });
  after(async () => {
    await server.close();
    server.cleanup();
  });
}

/** Every answer to hostile input is a success or a 4xx in the error envelope; never a 5xx. */
export function assertClientError(res: ApiResponse, what: string): void {
  assert.ok(res.status < 500, `${what} → ${res.status} ${res.text.slice(0, 300)}`);
  // Pages and the SVG badge answer errors for people (an HTML page, a "not found" badge); the API, JSON.
  const isJson = res.headers.get('content-type')?.includes('json') ?? false;
  if (what.includes(' /api/')) assert.ok(res.status < 400 || isJson, `${what}: an API error must be JSON`);
  // The MCP endpoint answers its transport's refusals as the protocol says: a JSON-RPC error object
  // (`{ jsonrpc, error: { code: <number>, message }, id }`); its tool errors carry the envelope.
  if (res.status >= 400 && isJson && /(^| )\/mcp\b/.test(what) && res.body?.jsonrpc === '2.0') {
    assert.equal(typeof res.body.error?.code, 'number', `${what}: ${res.text.slice(0, 200)}`);
    assert.equal(typeof res.body.error?.message, 'string', `${what}: ${res.text.slice(0, 200)}`);
    return;
  }
  if (res.status >= 400 && isJson) {
    const error = res.body?.error;
    assert.ok(
      error && typeof error.code === 'string' && typeof error.message === 'string',
      `${what}: ${res.text.slice(0, 200)}`,
    );
    assert.equal(typeof error.details, 'object');
  }
}

/** Any string, and those attacks try first: prototype keys, paths, SQL, NUL, a lone surrogate, markup. */
export const hostileString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '__proto__',
    'constructor',
    '../../etc/passwd',
    "' or 1=1 --",
    '%00',
    '\u0000',
    '\ud800',
    '<script>',
    'sha256:' + 'f'.repeat(64),
  ),
);
/** Any JSON value, nested a little, made of those strings. */
export const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.double(),
    fc.integer(),
    fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0, -0, true, false, null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 5 }),
  ),
})).value;
/** A notarize body whose fields are each hostile or absent (a well-formed hash among the choices). */
export const notarizeLike = fc.record(
  {
    contentHash: fc.oneof(
      hostileString,
      fc
        .string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 })
        .map((h) => 'sha256:' + h),
      hostileJson,
    ),
    label: fc.oneof(hostileString, hostileJson),
    metadata: hostileJson,
    idempotencyKey: fc.oneof(hostileString, hostileJson),
  },
  { requiredKeys: [] },
);

/** Percent-encodes every byte of the UTF-8 form, so even unpaired surrogates make a valid URL. */
const encodeBytes = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((b) => '%' + b.toString(16).padStart(2, '0')).join('');
/** The operation's path with every `{parameter}` set to `id`, each byte percent-encoded. */
export const concretePath = (path: string, id: string) => path.replace(/\{[^}]+\}/g, encodeBytes(id));
