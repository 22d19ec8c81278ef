import type { IdGenerator } from '../core/ids.ts';
import { generateApiKey, hashApiKey, looksLikeApiKey } from '../core/secrets.ts';
import type { Db } from '../db/index.ts';
import { AppError } from '../errors.ts';
import { refusedApiKey, type ApiKeyPrincipal } from '../http/auth.ts';
import { isoTime, isoTimeOrNull, type Clock } from '../platform/clock.ts';
import type { Account, ApiKey, CreateAccountBody, CreateApiKeyBody, Scope } from './accounts-schemas.ts';
import * as store from './accounts-store.ts';
import type { AccountRow, ApiKeyRow } from './accounts-store.ts';

const LAST_USED_INTERVAL_MS = 60_000;

interface AccountsServiceDeps {
  db: Db;
  ids: IdGenerator;
  clock: Clock;
}

/** Accounts and their API keys (docs/webhooks.md, "Accounts" and "API keys"; docs/decisions.md §5). */
export class AccountsService {
  readonly #deps: AccountsServiceDeps;
  /** keyId → when this process last recorded its use, so use is written at most once a minute. */
  readonly #lastTouched = new Map<string, number>();
  readonly #pendingTouches = new Set<Promise<void>>();

  constructor(deps: AccountsServiceDeps) {
    this.#deps = deps;
  }

  async createAccount(body: CreateAccountBody): Promise<Account> {
    const now = this.#deps.clock.now();
    const row: AccountRow = {
      id: this.#deps.ids.next('acct', now),
      name: body.name ?? '',
      owner_label: body.ownerLabel ?? '',
      status: 'active',
      created_at: now,
      updated_at: now,
    };
    await store.insertAccount(this.#deps.db, row);
    return toAccount(row);
  }

  async listAccounts(): Promise<Account[]> {
    return (await store.listAccounts(this.#deps.db)).map(toAccount);
  }

  /** The account, or a 404 naming it. */
  async requireAccount(id: string): Promise<Account> {
    const row = await store.findAccount(this.#deps.db, id);
    if (row === undefined)
      throw new AppError('not_found', `No account with id ${JSON.stringify(id)}`, { id });
    return toAccount(row);
  }

  /** Creates a key and returns the raw key with it: the only time the raw key exists outside the caller. */
  async createApiKey(accountId: string, body: CreateApiKeyBody): Promise<{ apiKey: ApiKey; key: string }> {
    await this.requireAccount(accountId);
    const now = this.#deps.clock.now();
    const generated = generateApiKey();
    const scopes: Scope[] = body.scopes ?? ['proofs:write'];
    const row: ApiKeyRow = {
      id: this.#deps.ids.next('key', now),
      account_id: accountId,
      name: body.name ?? '',
      key_prefix: generated.prefix,
      key_hash: generated.hash,
      scopes: JSON.stringify(scopes),
      status: 'active',
      created_at: now,
      last_used_at: null,
      revoked_at: null,
    };
    await store.insertApiKey(this.#deps.db, row);
    return { apiKey: toApiKey(row), key: generated.raw };
  }

  async listApiKeys(accountId: string): Promise<ApiKey[]> {
    await this.requireAccount(accountId);
    return (await store.listApiKeys(this.#deps.db, accountId)).map(toApiKey);
  }

  /** Idempotent: revoking a revoked key answers it unchanged. */
  async revokeApiKey(id: string): Promise<ApiKey> {
    await store.revokeApiKey(this.#deps.db, id, this.#deps.clock.now());
    const row = await store.findApiKey(this.#deps.db, id);
    if (row === undefined)
      throw new AppError('not_found', `No API key with id ${JSON.stringify(id)}`, { id });
    return toApiKey(row);
  }

  /**
   * Checks a raw key sent in X-Service-Key. Every refused key, unknown, revoked or malformed, gets the
   * same error after the same work (a hash and one indexed lookup of active keys), so the answer does not
   * tell a key that once worked from one that never did. A revoked key is refused at once, since every
   * request reads the key's current row.
   */
  async authenticate(raw: string): Promise<ApiKeyPrincipal> {
    const wellFormed = looksLikeApiKey(raw);
    const row = await store.findActiveApiKeyByHash(this.#deps.db, hashApiKey(raw));
    if (row === undefined || !wellFormed) throw refusedApiKey();
    this.#recordUse(row.id);
    return { keyId: row.id, accountId: row.account_id, scopes: JSON.parse(row.scopes) as string[] };
  }

  /** Waits for pending last-use writes (tests, graceful stop). */
  async flush(): Promise<void> {
    await Promise.all(this.#pendingTouches);
  }

  #recordUse(keyId: string): void {
    const now = this.#deps.clock.now();
    const last = this.#lastTouched.get(keyId);
    if (last !== undefined && now - last < LAST_USED_INTERVAL_MS) return;
    this.#lastTouched.set(keyId, now);
    const write = store
      .touchApiKey(this.#deps.db, keyId, now, LAST_USED_INTERVAL_MS)
      .catch(() => {
        // Not recorded this time: the next use tries again.
        this.#lastTouched.delete(keyId);
      })
      .finally(() => this.#pendingTouches.delete(write));
    this.#pendingTouches.add(write);
  }
}

function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    name: row.name,
    ownerLabel: row.owner_label,
    status: 'active',
    createdAt: isoTime(row.created_at),
    updatedAt: isoTime(row.updated_at),
  };
}

/**
 * The fields every document of something an account owns carries (an API key, a webhook): its id, the
 * account, its name and when it was created.
 */
export function ownedFields(row: { id: string; account_id: string; name: string; created_at: number }) {
  return { id: row.id, accountId: row.account_id, name: row.name, createdAt: isoTime(row.created_at) };
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    ...ownedFields(row),
    keyPrefix: row.key_prefix,
    scopes: JSON.parse(row.scopes) as string[],
    status: row.status === 'revoked' ? 'revoked' : 'active',
    lastUsedAt: isoTimeOrNull(row.last_used_at),
    revokedAt: isoTimeOrNull(row.revoked_at),
  };
}
