import type { ValidateFunction } from 'ajv';
import type { AppError } from '../errors.ts';
import { bodyValidators, describeValidationErrors, invalidRequest } from '../http/validation.ts';
import { isAppError } from '../errors.ts';
import { describeRequest, type DescribedRequest } from './notarize-request.ts';
import { NotarizeBody } from './proof-schemas.ts';

/** The most items one batch takes (docs/api.md, "Batches"). */
export const BATCH_MAX_ITEMS = 1000;
/** The largest batch body: 1,000 items of about 2 KiB each. */
export const BATCH_MAX_BYTES = 2 * 1024 * 1024;
/** A batch counts one request against the rate limit for each started hundred of items. */
export const ITEMS_PER_REQUEST = 100;

/** The rate-limit weight of a batch of `count` items. */
export function batchWeight(count: number): number {
  return Math.max(1, Math.ceil(count / ITEMS_PER_REQUEST));
}

/** An item of a batch that passed every check a notarize body passes. */
export interface ValidItem {
  index: number;
  body: NotarizeBody;
  request: DescribedRequest;
}

/** An item as read: valid, or the error notarize would have answered for the same body. */
export type ReadItem = { ok: true; item: ValidItem } | { ok: false; error: AppError };

let validator: ValidateFunction | undefined;

/**
 * Reads each item of a batch as `POST /api/proof/notarize` reads its body: the same schema (paths in
 * errors are relative to the item, as they would be for that body), then the checks the schema cannot
 * express. One bad item fails only itself.
 */
export function readItems(items: unknown[]): ReadItem[] {
  validator ??= bodyValidators().compile(NotarizeBody);
  const check = validator;
  return items.map((body, index): ReadItem => {
    if (!check(body))
      return { ok: false, error: invalidRequest(describeValidationErrors(check.errors ?? [], 'body')) };
    const valid = body as NotarizeBody;
    try {
      return { ok: true, item: { index, body: valid, request: describeRequest(valid) } };
    } catch (error) {
      if (isAppError(error)) return { ok: false, error };
      throw error;
    }
  });
}

/**
 * The first valid item of each idempotency key, in request order: the items a batch may create
 * proofs for. A later item with the same key is answered from the first (a replay, or 422 when its
 * content differs), as a notarize call right after would be.
 */
export function firstOfEachKey(read: ReadItem[]): ValidItem[] {
  const seen = new Set<string>();
  const firsts: ValidItem[] = [];
  for (const entry of read) {
    if (!entry.ok || seen.has(entry.item.body.idempotencyKey)) continue;
    seen.add(entry.item.body.idempotencyKey);
    firsts.push(entry.item);
  }
  return firsts;
}
