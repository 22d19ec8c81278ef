import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bitcoinBlockHash } from '../src/verify/bitcoin-header.ts';
import { Arrivals } from './wait.ts';

/**
 * A Bitcoin header server on loopback shaped as Esplora's API is (`GET /block-height/N`: the block hash
 * as text; `GET /block/HASH/header`: the 80-byte header as hex), serving the headers it is given.
 */
export interface HeaderServer {
  url: string;
  /** Every request path answered. */
  requests: Arrivals<string>;
  /** Serves `header` as the block at `height`. */
  add(height: number, header: Buffer): void;
  close(): Promise<void>;
}

export async function startHeaderServer(): Promise<HeaderServer> {
  const byHeight = new Map<number, string>();
  const byHash = new Map<string, Buffer>();
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    headers.requests.add(path);
    const height = /^\/block-height\/(\d+)$/.exec(path)?.[1];
    const hash = /^\/block\/([0-9a-f]{64})\/header$/.exec(path)?.[1];
    const found =
      height !== undefined ? byHeight.get(Number(height)) : hash && byHash.get(hash)?.toString('hex');
    if (found === undefined) res.writeHead(404, { 'content-type': 'text/plain' }).end('Block not found');
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(found);
  });
  const headers: HeaderServer = {
    url: '',
    requests: new Arrivals(),
    add: (height, header) => {
      const hash = bitcoinBlockHash(header);
      byHeight.set(height, hash);
      byHash.set(hash, header);
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  headers.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return headers;
}

/**
 * Real Bitcoin mainnet headers, from the test data of python3-opentimestamps (its tests of block
 * Merkle trees hold whole blocks; a block's first 80 bytes are its header): block 1 and block 170's
 * neighbour as that package gives them. Never made up here.
 */
export function mainnetHeaders(): { block1: Buffer } {
  const source = readFileSync('/usr/lib/python3/dist-packages/opentimestamps/tests/test_bitcoin.py', 'utf8');
  const blocks = [...source.matchAll(/CBlock\.deserialize\(x\('([0-9a-f]+)'\)\)/g)].map((m) =>
    Buffer.from(m[1]!.slice(0, 160), 'hex'),
  );
  const block1 = blocks.find(
    (header) =>
      bitcoinBlockHash(header) === '00000000839a8e6886ab5951d76f411475428afc90947ee320161bbf18eb6048',
  );
  if (block1 === undefined) throw new Error('python3-opentimestamps has no longer the header of block 1');
  return { block1 };
}
