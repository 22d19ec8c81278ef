import { ConfigError, loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';

/** Brings the configured database's schema up to date, then exits: run it once before a rollout. */
try {
  const config = loadConfig();
  const database = await openDatabase(config.database);
  await database.close();
  console.log(`hashproof: ${config.database.engine} schema is up to date`);
} catch (error) {
  if (error instanceof ConfigError)
    for (const problem of error.problems) console.error(`hashproof: configuration: ${problem}`);
  else
    console.error(`hashproof: migration failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
