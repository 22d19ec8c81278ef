import type { Config } from './config.ts';
import { createIdGenerator, type IdGenerator } from './core/ids.ts';
import { openDatabase, type DatabaseHandle } from './db/index.ts';
import { Keyring } from './keys/keyring.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { ProofsService } from './proofs/proofs-service.ts';
import { StatsService } from './stats/stats-service.ts';

/** Every dependency of the service, built once from the configuration and handed to each route plugin. */
export interface AppContext {
  config: Config;
  clock: Clock;
  ids: IdGenerator;
  database: DatabaseHandle;
  keyring: Keyring;
  proofs: ProofsService;
  /** Read-only figures about the proofs (dashboard, status, sitemap). */
  stats: StatsService;
  /** Finishes pending writes and closes the database. */
  close(): Promise<void>;
}

export interface ContextOverrides {
  clock?: Clock;
}

export async function createContext(config: Config, overrides: ContextOverrides = {}): Promise<AppContext> {
  const clock = overrides.clock ?? systemClock;
  const ids = createIdGenerator();
  const keyring = Keyring.open(config.signingKeysDir);
  const database = await openDatabase(config.database);
  const proofs = new ProofsService({ db: database.db, keyring, ids, clock });
  const stats = new StatsService({ db: database.db, clock });
  return {
    config,
    clock,
    ids,
    database,
    keyring,
    proofs,
    stats,
    async close() {
      await proofs.drain();
      await database.close();
    },
  };
}
