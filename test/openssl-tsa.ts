import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { AsnConvert } from '@peculiar/asn1-schema';
import { TimeStampReq } from '@peculiar/asn1-tsp';
import { Arrivals } from './wait.ts';

const run = promisify(execFile);

/**
 * A time-stamping authority that is not ours: OpenSSL's own (`openssl ts -reply`), with a root and a
 * TSA certificate made here, behind a small HTTP front on loopback that speaks RFC 3161 over HTTP.
 * Tests check its tokens with OpenSSL against `rootPem`, never against hashproof's keys.
 */
export interface OpensslTsa {
  url: string;
  dir: string;
  /** Files holding the root and the TSA certificate, PEM. */
  rootFile: string;
  tsaCertFile: string;
  rootPem: string;
  /**
   * The message imprint (hex) of every request answered, in order: only answers the client was still
   * there to take (a client that gave up, timed out under load, is not counted).
   */
  imprints: Arrivals<string>;
  /** When each imprint's reply was sent (`Date.now()`). */
  answeredAt: Map<string, number>;
  /** `ok`: answers; `down`: answers 503; `hold`: keeps requests waiting until the mode changes. */
  mode: 'ok' | 'down' | 'hold';
  setMode(mode: 'ok' | 'down' | 'hold'): void;
  close(): Promise<void>;
}

const CONFIG = (dir: string) => `
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = ${dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.pem
certs = $dir/tsa.pem
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.4146.2.3
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
`;

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir });
}

export async function startOpensslTsa(name = 'Outside Test'): Promise<OpensslTsa> {
  const dir = mkdtempSync(path.join(tmpdir(), 'openssl-tsa-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await openssl(
    dir,
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'root.key',
    '-out',
    'root.pem',
    '-days',
    '3650',
    '-subj',
    `/CN=${name} Time-Stamping Root/O=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  await openssl(
    dir,
    'req',
    '-new',
    ...ec,
    '-keyout',
    'tsa.key',
    '-out',
    'tsa.csr',
    '-subj',
    `/CN=${name} TSA/O=${name}`,
  );
  writeFileSync(
    path.join(dir, 'tsa.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\nextendedKeyUsage=critical,timeStamping\n',
  );
  await openssl(
    dir,
    'x509',
    '-req',
    '-in',
    'tsa.csr',
    '-CA',
    'root.pem',
    '-CAkey',
    'root.key',
    '-CAcreateserial',
    '-out',
    'tsa.pem',
    '-days',
    '3650',
    '-extfile',
    'tsa.ext',
  );
  writeFileSync(path.join(dir, 'serial'), '01\n');
  writeFileSync(path.join(dir, 'tsa.cnf'), CONFIG(dir));

  const imprints = new Arrivals<string>();
  let queue: Promise<unknown> = Promise.resolve();
  let counter = 0;
  const held = new Set<() => void>();
  // `openssl ts -reply` keeps its serial number in a file: one reply at a time.
  const reply = (query: Buffer): Promise<Buffer> => {
    const n = counter++;
    const next = queue.then(async () => {
      const queryFile = path.join(dir, `q${n}.tsq`);
      const replyFile = path.join(dir, `r${n}.tsr`);
      writeFileSync(queryFile, query);
      await openssl(dir, 'ts', '-reply', '-config', 'tsa.cnf', '-queryfile', queryFile, '-out', replyFile);
      const bytes = readFileSync(replyFile);
      rmSync(queryFile);
      rmSync(replyFile);
      return bytes;
    });
    queue = next.catch(() => undefined);
    return next;
  };

  const tsa: OpensslTsa = {
    url: '',
    dir,
    rootFile: path.join(dir, 'root.pem'),
    tsaCertFile: path.join(dir, 'tsa.pem'),
    rootPem: readFileSync(path.join(dir, 'root.pem'), 'utf8'),
    imprints,
    answeredAt: new Map(),
    mode: 'ok',
    setMode(mode) {
      tsa.mode = mode;
      if (mode !== 'hold') for (const release of [...held]) release();
    },
    async close() {
      tsa.setMode('down');
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    while (tsa.mode === 'hold') await new Promise<void>((resolve) => held.add(resolve));
    if (tsa.mode === 'down' || request.method !== 'POST') {
      response.writeHead(503).end();
      return;
    }
    try {
      const query = Buffer.concat(chunks);
      const parsed = AsnConvert.parse(query, TimeStampReq);
      const bytes = await reply(query);
      const imprint = Buffer.from(parsed.messageImprint.hashedMessage.buffer).toString('hex');
      if (request.socket.destroyed) return;
      response.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(bytes, () => {
        tsa.answeredAt.set(imprint, Date.now());
        imprints.add(imprint);
      });
    } catch {
      response.writeHead(400).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tsa.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tsa`;
  return tsa;
}

/** `openssl ts -verify` of a DER token over `data` against the authority's own root: true when it verifies. */
export async function opensslVerifies(
  tsa: Pick<OpensslTsa, 'rootFile' | 'tsaCertFile'>,
  data: Buffer,
  token: Buffer,
): Promise<boolean> {
  const dir = mkdtempSync(path.join(tmpdir(), 'openssl-verify-'));
  try {
    writeFileSync(path.join(dir, 'data'), data);
    writeFileSync(path.join(dir, 'token.der'), token);
    await run(
      'openssl',
      [
        'ts',
        '-verify',
        '-data',
        'data',
        '-token_in',
        '-in',
        'token.der',
        '-CAfile',
        tsa.rootFile,
        '-untrusted',
        tsa.tsaCertFile,
      ],
      { cwd: dir },
    );
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
