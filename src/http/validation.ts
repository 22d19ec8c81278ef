import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { AppError } from '../errors.ts';
import { CONTENT_HASH_PATTERN, SINGLE_LINE_PATTERN } from '../core/field-rules.ts';

// ajv-formats ships CommonJS with a default export property.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const shared: Options = { allErrors: true, removeAdditional: false, useDefaults: false, strict: false };

/**
 * Fastify's default Ajv strips unknown properties and coerces types, which would accept `label: 5` and
 * extra fields. Bodies are validated as sent; query strings, params and headers are text on the wire,
 * so there numbers and booleans are coerced.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodyAjv = bodyValidators();
  const textAjv = addFormats(new Ajv({ ...shared, coerceTypes: 'array' }));
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : textAjv;
    return ajv.compile(schema as object);
  };
}

/** An Ajv that checks JSON bodies exactly as the routes do (no coercion, no stripping). */
export function bodyValidators(): Ajv {
  return addFormats(new Ajv({ ...shared, coerceTypes: false }));
}

/** The 400 `invalid_request` of failing fields, the same for a whole body and for one item of a batch. */
export function invalidRequest(errors: FieldError[]): AppError {
  const first = errors[0];
  const message = first ? `Invalid request: ${first.path} ${first.message}` : 'Invalid request';
  return new AppError('invalid_request', message, { errors });
}

/** Said instead of Ajv's "must match pattern …", which shows the caller a regular expression. */
const PATTERN_MESSAGES: Record<string, string> = {
  [SINGLE_LINE_PATTERN]: 'must be one line only (no line breaks, tabs or other control characters)',
  [CONTENT_HASH_PATTERN]: 'must be sha256: followed by 64 hexadecimal digits',
};

interface FieldError {
  location: string;
  path: string;
  message: string;
  keyword: string;
}

/** One entry per failing field, with a JSON Pointer that names the field itself (not its parent). */
export function describeValidationErrors(
  errors: ErrorObject[] | Partial<ErrorObject>[],
  location: string,
): FieldError[] {
  return errors.map((error) => {
    let pointer = error.instancePath ?? '';
    const params = (error.params ?? {}) as Record<string, unknown>;
    if (error.keyword === 'required' && typeof params.missingProperty === 'string') {
      pointer += '/' + escapePointer(params.missingProperty);
    } else if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
      pointer += '/' + escapePointer(params.additionalProperty);
    }
    let message = error.message ?? 'is invalid';
    if (error.keyword === 'additionalProperties') message = 'is not an allowed property';
    if (error.keyword === 'required') message = 'is required';
    if (error.keyword === 'pattern' && typeof params.pattern === 'string')
      message = PATTERN_MESSAGES[params.pattern] ?? message;
    return { location, path: pointer || '/', message, keyword: error.keyword ?? 'invalid' };
  });
}

function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** For routes whose JSON body is optional: a request without a body is validated as `{}`. */
export async function defaultEmptyBody(request: { body: unknown }): Promise<void> {
  request.body ??= {};
}
