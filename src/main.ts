import module from 'node:module';

// Node keeps the compiled (and type-stripped) modules on disk between starts, which makes a start
// about a fifth faster; the modules are therefore loaded below, after the cache is on.
module.enableCompileCache();
const { buildApp } = await import('./app.ts');
const { ConfigError, loadConfig } = await import('./config.ts');
const { createContext } = await import('./context.ts');

/**
 * Starts the service from the environment; SIGTERM or SIGINT drain in-flight requests, then exit 0 (a
 * repeated signal during the drain changes nothing); SIGHUP reloads the signing keys.
 */
async function main(): Promise<void> {
  let ctx;
  try {
    ctx = await createContext(loadConfig());
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const problem of error.problems) process.stderr.write(`hashproof: configuration: ${problem}\n`);
      process.exit(2);
    }
    throw error;
  }
  const config = ctx.config;
  const app = await buildApp(ctx);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'stopping: finishing in-flight requests');
    try {
      await app.close();
      await ctx.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error while stopping');
      process.exit(1);
    }
  };
  // SIGHUP reads the signing keys again (hashproof keys rotate; docs/operations.md): new keys sign
  // from their own time on, and a request in flight finishes with the keys it took.
  process.on('SIGHUP', () => {
    try {
      const known = new Set(ctx.keyring.receiptKeys().map((key) => key.keyId));
      ctx.keyring.reload();
      const now = Date.now();
      const signing = ctx.keyring.signingKeys(now);
      const added = ctx.keyring.receiptKeys().filter((key) => !known.has(key.keyId));
      app.log.info(
        {
          hmacKeyId: signing.hmac.keyId,
          receiptKeyId: signing.receipt.keyId,
          added: added.map((key) => ({ keyId: key.keyId, validFrom: key.validFrom })),
        },
        'signing keys reloaded',
      );
      const late = added.filter((key) => Date.parse(key.validFrom) < now);
      if (late.length > 0)
        app.log.warn(
          { keyIds: late.map((key) => key.keyId) },
          "a receipt key took over before this instance read it: receipts it signed in between lie outside the old key's window",
        );
    } catch (error) {
      app.log.error({ err: error }, 'signing keys not reloaded: the keys in use stay');
    }
  });
  // Kept for the whole drain, not once: a signal to a process group (a terminal's Ctrl-C, systemd's
  // default KillMode) reaches the service twice under `npm start` or `hashproof serve`, once directly and
  // once passed on, and Node's default action for the second would kill it with requests in flight.
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  await app.listen({ host: config.host, port: config.port });
  ctx.start();
  app.log.info(
    { mode: config.paymentMode, database: config.database.engine, publicBaseUrl: config.publicBaseUrl },
    'hashproof is serving',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `hashproof: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
