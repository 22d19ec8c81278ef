import type { Kysely } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m0001 from './0001-proofs.ts';
import * as m0002 from './0002-accounts-webhooks.ts';
import * as m0003 from './0003-label-search.ts';
import * as m0004 from './0004-receipts.ts';
import * as m0005 from './0005-log.ts';
import * as m0006 from './0006-timestamps.ts';
import * as m0007 from './0007-label-index-by-batch.ts';
import * as m0008 from './0008-proof-counts.ts';
import * as m0009 from './0009-payment-authorizations.ts';
import * as m0010 from './0010-label-scan-index.ts';
import * as m0011 from './0011-token-format.ts';
import * as m0012 from './0012-anchors.ts';
import * as m0013 from './0013-anchor-ots.ts';
import * as m0014 from './0014-witnesses.ts';
import type { MigrationContext } from './index.ts';

interface MigrationModule {
  up(db: Kysely<unknown>, context: MigrationContext): Promise<void>;
}

/** The ordered list of migrations. A migration that has shipped is never edited; add a new one. */
const MIGRATIONS: Record<string, MigrationModule> = {
  '0001-proofs': m0001,
  '0002-accounts-webhooks': m0002,
  '0003-label-search': m0003,
  '0004-receipts': m0004,
  '0005-log': m0005,
  '0006-timestamps': m0006,
  '0007-label-index-by-batch': m0007,
  '0008-proof-counts': m0008,
  '0009-payment-authorizations': m0009,
  '0010-label-scan-index': m0010,
  '0011-token-format': m0011,
  '0012-anchors': m0012,
  '0013-anchor-ots': m0013,
  '0014-witnesses': m0014,
};

export function migrationProvider(context: MigrationContext): MigrationProvider {
  return {
    async getMigrations() {
      const migrations: Record<string, Migration> = {};
      for (const [name, module] of Object.entries(MIGRATIONS)) {
        migrations[name] = { up: (db) => module.up(db, context) };
      }
      return migrations;
    },
  };
}
