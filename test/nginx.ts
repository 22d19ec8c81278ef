import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import path from 'node:path';
import { printed, run, start, START_TIMEOUT_MS } from './process.ts';
import { within } from './wait.ts';
import type { ChildProcess } from 'node:child_process';

/**
 * Where nginx listens, `localhost` to its clients: an address no other test binds, so a port found free
 * here stays free while the instances start (other processes on the machine listen on 127.0.0.1).
 */
const NGINX_ADDRESS = '127.0.0.8';

/** A port free on nginx's address. */
export function freeNginxPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, NGINX_ADDRESS, () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** The nginx configuration the project ships (docs/deploy.md, "Behind a reverse proxy"). */
const SHIPPED = path.resolve(import.meta.dirname, '../deploy/nginx/hashproof.conf');

export interface NginxOptions {
  /** A fresh directory: nginx's prefix, certificate, configuration, logs and temporary files. */
  dir: string;
  httpsPort: number;
  httpPort: number;
  /** `host:port` of each instance, in place of the shipped file's two. */
  upstreams: [string, string];
  /** The address nginx connects to the instances from, in place of the shipped `proxy_bind`. */
  bindAddress: string;
}

export interface Nginx {
  child: ChildProcess;
  /** The public origin: `https://localhost:<httpsPort>`. */
  origin: string;
  /** Plain http, which nginx redirects: `http://localhost:<httpPort>`. */
  httpOrigin: string;
  /** The certificate nginx serves, self-signed: the clients' only trusted root. */
  ca: Buffer;
  /** The lines of the shipped access log so far. */
  accessLog(): string[];
  stop(): Promise<void>;
}

/** Replaces `pattern` in `text`, which must match exactly `count` times: a shipped file that changed fails here. */
function substitute(text: string, pattern: string, replacement: string, count: number): string {
  const found = text.split(pattern).length - 1;
  if (found !== count)
    throw new Error(`the shipped nginx file has ${found} × "${pattern}", expected ${count}`);
  return text.replaceAll(pattern, replacement);
}

/** The shipped file with this machine's addresses, ports and paths, every directive kept. */
function localConfig(options: NginxOptions, paths: { cert: string; key: string; log: string }): string {
  const origin = `https://localhost:${options.httpsPort}`;
  let text = readFileSync(SHIPPED, 'utf8');
  text = substitute(text, 'server 10.0.0.11:8080 ', `server ${options.upstreams[0]} `, 1);
  text = substitute(text, 'server 10.0.0.12:8080 ', `server ${options.upstreams[1]} `, 1);
  text = substitute(text, 'proxy_bind 10.0.0.10;', `proxy_bind ${options.bindAddress};`, 1);
  text = substitute(text, 'listen 80;', `listen ${NGINX_ADDRESS}:${options.httpPort};`, 1);
  text = substitute(text, 'listen 443 ssl;', `listen ${NGINX_ADDRESS}:${options.httpsPort} ssl;`, 1);
  text = substitute(text, 'https://proofs.example.com', origin, 1);
  text = substitute(text, 'server_name proofs.example.com;', 'server_name localhost;', 2);
  text = substitute(text, '/etc/ssl/hashproof/fullchain.pem', paths.cert, 1);
  text = substitute(text, '/etc/ssl/hashproof/privkey.pem', paths.key, 1);
  text = substitute(text, '/var/log/nginx/hashproof.access.log', paths.log, 1);
  const leftover = /10\.0\.0\.\d+|example\.com|\/etc\/|\/var\//.exec(text.replace(/#.*$/gm, ''));
  if (leftover)
    throw new Error(`the shipped nginx file names ${leftover[0]}, which the test does not replace`);
  return text;
}

/**
 * Starts Debian's nginx as a real process (master and a worker, in the foreground) with the shipped
 * configuration, terminating TLS with a certificate made here by OpenSSL for localhost, in front of two
 * upstreams. What Debian's /etc/nginx/nginx.conf provides around it (pid, logs, temporary paths) is
 * written here, in the directory.
 */
export async function startNginx(options: NginxOptions): Promise<Nginx> {
  const { dir } = options;
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const log = path.join(dir, 'access.log');
  const made = await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost',
    '-keyout', key, '-out', cert,
  ]); // prettier-ignore
  if (made.code !== 0) throw new Error(`openssl req failed: ${made.stderr}`);
  writeFileSync(path.join(dir, 'hashproof.conf'), localConfig(options, { cert, key, log }));
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, name)};`;
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    [
      'daemon off;',
      'master_process on;',
      'worker_processes 1;',
      'error_log stderr notice;',
      `pid ${path.join(dir, 'nginx.pid')};`,
      'events { worker_connections 1024; }',
      'http {',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp),
      `include ${path.join(dir, 'hashproof.conf')};`,
      '}',
    ].join('\n'),
  );
  // Started as root, nginx's worker runs as nobody: it must reach its temporary directories.
  chmodSync(dir, 0o755);
  const child = start('nginx', ['-e', 'stderr', '-p', dir, '-c', path.join(dir, 'nginx.conf')]);
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit');
  await printed(child, 'start worker process', START_TIMEOUT_MS);
  return {
    child,
    origin: `https://localhost:${options.httpsPort}`,
    httpOrigin: `http://localhost:${options.httpPort}`,
    ca: readFileSync(cert),
    accessLog: () => readFileSync(log, 'utf8').split('\n').filter(Boolean),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGQUIT'); // nginx's graceful stop
      await within(exited, { what: 'nginx exits', seen: () => output });
    },
  };
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The client's own address (any of 127.0.0.0/8 on Linux): who nginx or the instance sees. */
  localAddress?: string;
  /** Trusted roots for https. */
  ca?: Buffer;
}

/**
 * One request on a connection of its own from `localAddress`. A URL naming localhost connects to where
 * nginx listens, and https checks the certificate for localhost.
 */
export function send(url: string, options: SendOptions = {}): Promise<Answer> {
  const target = new URL(url);
  const isHttps = target.protocol === 'https:';
  const request = isHttps ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname === 'localhost' ? NGINX_ADDRESS : target.hostname,
        port: Number(target.port),
        path: target.pathname + target.search,
        method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
        agent: false,
        localAddress: options.localAddress,
        headers: {
          host: target.host,
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        ...(isHttps ? { servername: target.hostname, ca: options.ca } : {}),
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
