import { canonicalJson, nestsDeeperThan } from '../core/canonical-json.ts';
import { metadataHash, metadataKeys, normalizeContentHash, sha256Hex } from '../core/hashing.ts';
import { AppError } from '../errors.ts';
import type { NotarizeBody } from './proof-schemas.ts';
import type { PaidVia } from '../stats/stats-service.ts';

export const METADATA_MAX_BYTES = 8192;
/** Deeper metadata is refused before anything recursive (serialization, hashing) walks it. */
const METADATA_MAX_DEPTH = 32;

/** Who asks for a proof: decides the idempotency scope and what the proof records (docs/api.md, "Idempotency"). */
export type Principal =
  | { kind: 'public' }
  | { kind: 'account'; accountId: string }
  | { kind: 'payer'; network: string; payer: string };

export interface DescribedRequest {
  contentHash: string;
  metadataHash: string;
  metadataKeys: string[];
  fingerprint: string;
}

/** Checks what the schema cannot express and derives every hash of the request. */
export function describeRequest(body: NotarizeBody): DescribedRequest {
  const metadata = body.metadata as Record<string, unknown> | undefined;
  if (metadata !== undefined) {
    if (nestsDeeperThan(metadata, METADATA_MAX_DEPTH)) {
      throw invalidField(
        '/metadata',
        `must not nest objects and arrays deeper than ${METADATA_MAX_DEPTH} levels`,
        'maxDepth',
      );
    }
    const sizeBytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
    if (sizeBytes > METADATA_MAX_BYTES) {
      throw invalidField(
        '/metadata',
        `must be at most ${METADATA_MAX_BYTES} bytes as JSON (got ${sizeBytes})`,
        'maxBytes',
      );
    }
    const malformed = findIllFormedString(metadata, '/metadata');
    if (malformed !== undefined)
      throw invalidField(malformed, 'contains an unpaired UTF-16 surrogate', 'wellFormed');
  }
  for (const field of ['label', 'idempotencyKey'] as const) {
    if (!body[field].isWellFormed())
      throw invalidField(`/${field}`, 'contains an unpaired UTF-16 surrogate', 'wellFormed');
  }
  const contentHash = normalizeContentHash(body.contentHash);
  const hashOfMetadata = metadataHash(metadata);
  return {
    contentHash,
    metadataHash: hashOfMetadata,
    metadataKeys: metadataKeys(metadata),
    fingerprint: sha256Hex(canonicalJson({ contentHash, label: body.label, metadataHash: hashOfMetadata })),
  };
}

function invalidField(path: string, message: string, keyword: string): AppError {
  return new AppError('invalid_request', `Invalid request: ${path} ${message}`, {
    errors: [{ location: 'body', path, message, keyword }],
  });
}

/** Text that is not valid Unicode cannot be stored and read back unchanged, so it is refused. */
function findIllFormedString(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.isWellFormed() ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findIllFormedString(item, `${path}/${i}`);
      if (found !== undefined) return found;
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (!key.isWellFormed()) return `${path}/${key}`;
      const found = findIllFormedString(item, `${path}/${key}`);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** How the proof a principal asks for is paid for (stored as `created_via`). */
export function paidVia(principal: Principal): PaidVia {
  switch (principal.kind) {
    case 'public':
      return 'demo';
    case 'account':
      return 'api_key';
    case 'payer':
      return 'x402';
  }
}

export function idempotencyScope(principal: Principal): string {
  switch (principal.kind) {
    case 'public':
      return 'public';
    case 'account':
      return `acct:${principal.accountId}`;
    case 'payer':
      return `payer:${principal.network}:${principal.payer.toLowerCase()}`;
  }
}
