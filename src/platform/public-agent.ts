import dns from 'node:dns';
import { isIP, Socket, type LookupFunction, type TcpNetConnectOpts } from 'node:net';
import type { Duplex } from 'node:stream';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { isPublicAddress } from './public-address.ts';

/** The code of the error a connection to an address that is not public fails with. */
export const ADDRESS_REFUSED = 'ERR_ADDRESS_REFUSED';

type Listener = (error: Error | null, socket: Duplex) => void;
type Connect = (options: TcpNetConnectOpts, listener?: Listener) => Duplex | Socket;

function refused(host: string, address: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(
    `${address} (${host}) is not a public unicast address: not allowed`,
  );
  error.code = ADDRESS_REFUSED;
  return error;
}

/** Resolves a name with `resolve` and fails unless every address it has is public, not only the first. */
function publicOnlyLookup(resolve: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, found, family) => {
      if (error) return callback(error, '');
      const addresses = Array.isArray(found) ? found : [{ address: found, family: family ?? 0 }];
      const bad = addresses.find(({ address }) => !isPublicAddress(address));
      if (bad !== undefined || addresses.length === 0) {
        return callback(refused(hostname, bad?.address ?? 'no address'), '');
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * request-filtering-agent lets through any address whose ipaddr.js range is "unicast", and that takes in
 * IPv4-compatible (`::7f00:1`) and local-use NAT64 addresses that lead to loopback or private IPv4.
 * Our own check (`isPublicAddress`, the one registration uses) runs first, on a literal host and on
 * every address DNS returns; the library's still runs after it.
 */
function connectChecked(
  connect: Connect,
  resolve: LookupFunction,
  options: TcpNetConnectOpts,
  listener?: Listener,
): Duplex | Socket {
  const host = options.host;
  if (host !== undefined && isIP(host) !== 0 && !isPublicAddress(host)) {
    const socket = new Socket();
    if (listener) listener(refused(host, host), socket);
    else socket.destroy(refused(host, host));
    return socket;
  }
  return connect({ ...options, lookup: publicOnlyLookup(options.lookup ?? resolve) }, listener);
}

// A mixin's base must be typed as a constructor of any arguments (TypeScript's rule for mixins).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type FilteringAgent = new (...args: any[]) => {
  createConnection(options: TcpNetConnectOpts, listener?: Listener): Duplex | Socket;
};

/**
 * An agent of `Base` (request-filtering-agent's HTTP or HTTPS agent) whose connections go only to public
 * addresses. `resolve` looks host names up (dns.lookup unless a test says otherwise).
 */
function publicAgent<T extends FilteringAgent>(Base: T) {
  return class extends Base {
    #resolve: LookupFunction = dns.lookup;
    withLookup(resolve: LookupFunction | undefined): this {
      if (resolve !== undefined) this.#resolve = resolve;
      return this;
    }
    override createConnection(options: TcpNetConnectOpts, listener?: Listener): Duplex | Socket {
      return connectChecked((o, l) => super.createConnection(o, l), this.#resolve, options, listener);
    }
  };
}

export const PublicHttpAgent = publicAgent(RequestFilteringHttpAgent);
export const PublicHttpsAgent = publicAgent(RequestFilteringHttpsAgent);
