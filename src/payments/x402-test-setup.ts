/**
 * The service in x402 mode for the payment tests: a local Base chain with USDC (test/x402-chain.ts),
 * the official facilitator on loopback, and the service charging its production price there. A test
 * file calls `withX402Service()` once; the bindings below hold the running parts during its tests.
 */
import { after, before, type TestContext } from 'node:test';
import { sql } from 'kysely';
import type { PrivateKeyAccount } from 'viem/accounts';
import { ADMIN_KEY, sampleHash, startServer, type TestServer } from '../../test/helper.ts';
import { startChain, startFacilitator, type Chain, type Facilitator } from '../../test/x402-chain.ts';
import {
  postPaid as postPaidTo,
  proofsOf as proofsOfAt,
  signedPayment as signedPaymentFor,
} from '../../test/x402-client.ts';

export let chain: Chain;
export let facilitator: Facilitator;
export let server: TestServer;
/** The wallet the service is paid to. */
export let payTo: string;
let counter = 0;

/** A notarize request for new content, unique in this test process. */
export function body(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  counter++;
  return {
    contentHash: sampleHash(1000 + counter),
    label: `paid proof ${counter}`,
    metadata: { run: counter },
    idempotencyKey: `paid-${counter}-${Date.now()}`,
    ...overrides,
  };
}

export const signedPayment = (account: PrivateKeyAccount): Promise<string> =>
  signedPaymentFor(account, server.baseUrl);
export const postPaid = (header: string, payload: unknown, target = server): Promise<Response> =>
  postPaidTo(target.baseUrl, header, payload);
export const proofsOf = (contentHash: string, target = server): Promise<number> =>
  proofsOfAt(target.baseUrl, contentHash);

/** Starts the chain, the facilitator and the service before the file's tests; stops them after. */
export function withX402Service(): void {
  before(async () => {
    chain = await startChain();
    facilitator = await startFacilitator(chain);
    payTo = (await chain.fundedWallet(0n)).address;
    server = await startServer({
      env: {
        PAYMENT_MODE: 'x402',
        X402_PAY_TO: payTo,
        X402_FACILITATOR_URL: facilitator.url,
        X402_FACILITATOR_TIMEOUT_MS: '1500',
        SERVICE_ADMIN_KEY: ADMIN_KEY,
      },
    });
  });

  after(async () => {
    await server.close();
    server.cleanup();
    await facilitator.close();
  });
}

/** From now until the test ends, the store refuses every proof: a payment settles, its commit fails. */
export async function refuseProofs(t: TestContext): Promise<void> {
  const { db, engine } = server.ctx.database;
  if (engine === 'sqlite') {
    await sql`create trigger refuse_proofs before insert on proofs begin select raise(abort, 'refused'); end`.execute(
      db,
    );
    t.after(() => sql`drop trigger refuse_proofs`.execute(db));
  } else {
    await sql`create function refuse_proofs() returns trigger language plpgsql as $$ begin raise exception 'refused'; end $$`.execute(
      db,
    );
    await sql`create trigger refuse_proofs before insert on proofs for each row execute function refuse_proofs()`.execute(
      db,
    );
    t.after(async () => {
      await sql`drop trigger refuse_proofs on proofs`.execute(db);
      await sql`drop function refuse_proofs()`.execute(db);
    });
  }
}
