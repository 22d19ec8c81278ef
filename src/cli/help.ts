/** The help of each command (`hashproof <command> --help`), and of the command itself. */
export const HELP = {
  main: `hashproof: timestamped proofs of SHA-256 hashes

Usage: hashproof <command> [options]

Commands:
  stamp <file|dir|->…     hash files locally and create one proof per file (writes <file>.proof.json);
                          --aggregate: one proof for the set, each file with its path to the root
  verify <file> [proof]   check a file against its proof (offline; --online also asks the service)
  show <proof-id|url>     print a proof (its id, or its page or badge URL)
  search [options]        find proofs (--q, --content-hash, --file, --account, --limit)
  admin <area> <action>   accounts, API keys and webhooks, over HTTP (needs SERVICE_ADMIN_KEY)
  serve                   run the service (--port, --database, --mode)
  keys <action>           the service's signing keys, as files: init, list, rotate, export-public
  mcp                     an MCP server on standard input/output for an agent: stamp_file, verify_file, …
  monitor                 follow the service's log: signatures, consistency, entries against tiles
  backup --out DIR        copy the keys, the log's record and the embedded database, while it runs
  restore --from DIR      put a backup back (the service stopped; --force replaces a database)
  witness                 cosign a log's checkpoints (C2SP tlog-witness): --keys-dir, --state-dir, --log

Help on one command: hashproof help <command>, or hashproof <command> --help.

Common options: --url (or HASHPROOF_URL, default http://127.0.0.1:8080), --json, --help,
  --timeout SECONDS (each try of a request, default 30; 3 tries, a 429 or 503 after its Retry-After)
Exit codes: 0 success; 1 a proof or log failed a check, or the service refused the request (4xx);
  2 usage error; 3 the check could not be made (unreachable, timeout, answer over its cap or malformed,
  429 or 5xx after the retries, no consistency proof)

stamp, verify --online and monitor remember the largest checkpoint of each log they verified (in
HASHPROOF_STATE_DIR, default $XDG_STATE_HOME/hashproof or ~/.local/state/hashproof) and exit 1 with
"log fork detected: …" when the log proves it does not extend it (exit 3, "could not check the log: …",
when it gives no consistency proof). Text from the service is printed with control characters escaped.

Witnesses (stamp, verify, monitor): --witness <verifier key> (repeatable) and --witness-quorum N
(default: all given) count a log checkpoint only when at least N of those witnesses cosigned it (C2SP
tlog-cosignature); one cosignature line of a given witness that does not verify rejects it.`,
  stamp: `Usage: hashproof stamp <file|dir|->… [--label L] [--metadata key=value]… [--out F] [--api-key K] [--json]
       [--witness VKEY]… [--witness-quorum N] [--witness-wait S]

Hashes each file as a stream and creates its proof. The idempotency key is derived from the hash and the
label, so running the command again never creates (or pays for) a second proof. A directory is stamped
recursively, skipping *.proof.json; many files go through batches of up to 1,000 (one payment each
with a wallet, at most $1), paced by the service's rate limit, and a file whose proof file is already
complete is not sent again; - reads standard input, stamped alone, and prints its proof file on
standard output unless --out names one. Writes <file>.proof.json beside each file,
or --out for a single input. --label is one line of 1 to 120 characters. The API key comes from --api-key or HASHPROOF_API_KEY.
On a terminal, many files (or one over 64 MiB) show their progress on standard error.

       hashproof stamp --aggregate <file|dir>… [--label L] [--metadata key=value]… [--ots] [--json]

--aggregate: one proof for the whole set. The files (sorted bytewise by path) are the leaves of an
RFC 6962 tree over their SHA-256; only its root is sent, with the metadata aggregate=rfc6962 and count.
Each file gets <file>.proof.json with its path to the root (hashproof verify checks it). --ots also
writes <file>.ots, which the reference ots verify reads from the file itself, once the proof's
checkpoint is anchored: run the same command again later (it creates no new proof) for those not yet written.

--witness VKEY (repeatable; a witness's verifier key <name>+<hex key id>+<base64>) and --witness-quorum N
(default: all given): each proof file must lead to a checkpoint at least N of those witnesses cosigned.
When the log's checkpoint lacks the quorum, stamp reads it again for at most --witness-wait seconds
(default 30; 0: one look) and brings the proof files up to the first cosigned one. Not reached in time:
the proof files are written with the checkpoint the log gave and stamp exits 3, saying which witnesses
are missing (hashproof verify --online with the same options brings a file up later). A cosignature of
a given witness that does not verify: exit 1, "log checkpoint rejected: …".`,
  verify: `Usage: hashproof verify <file | - proof.json> [proof.json] [--keys manifest.json] [--online] [--tsa-roots roots.pem] [--bitcoin-headers URL] [--timeout S] [--json]
       [--witness VKEY]… [--witness-quorum N] [--witness-wait S]

Says "verified" (exit 0) only when, with keys it trusts, the file's SHA-256 is the proof's contentHash,
the proof is well formed, the Ed25519 receipt verifies, the RFC 3161 token names this hash and time,
the log's inclusion proof (once the proof is in the log) leads to a signed checkpoint, and every anchor
the proof file carries holds; anything missing is "not verified" (exit 1), the last line says what.
Trusted keys: --keys names a copy of the service's /.well-known/hashproof-keys.json you kept; --online
takes the service's (checked against the keys remembered for it); otherwise the keys remembered for the
proof's service at the first online contact (HASHPROOF_STATE_DIR). Keys inside a proof file are never
trusted. --online also asks the service to check the HMAC signature, checks that its log extends every
checkpoint of it seen before, and saves the proof's anchors into the proof file once they verify.
Outside roots make anchors count: --tsa-roots (a PEM file of the authorities' own roots) for RFC 3161
tokens, --bitcoin-headers (an Esplora-compatible API) for Bitcoin attestations; without them an anchor
is reported, not counted. Exit 3 when a check could not be made (no answer, timeout, 429 or 5xx).
--witness VKEY (repeatable) and --witness-quorum N (default: all given): the checkpoint of the proof
file's tlog-proof must carry valid cosignatures of at least N of those witnesses (checks "witness
<name>" and "witnesses"); a cosignature of a given witness that does not verify fails the proof. With
--online, the file's checkpoint is first brought up to the log's latest cosigned one (waiting at most
--witness-wait seconds, default 30, when the file's lacks the quorum) and saved once the file verifies.`,
  show: `Usage: hashproof show <proof-id | proof-url> [--json]

Prints a proof. It is named by its id (proof_ and 26 capital letters and digits, as in
proof_01JZ8Q3W6X2Y4Z5A6B7C8D9E0F) or by a URL ending in it: its page (…/proof/<id>), its badge
(…/proof/<id>/badge.svg) or its API document (…/api/proofs/<id>). The proof is read from the service
of --url (or HASHPROOF_URL).`,
  search:
    'Usage: hashproof search [--q TEXT] [--content-hash H] [--file F] [--account ID] [--limit N] [--json]',
  admin: `Usage: hashproof admin <area> <action> [args] (admin key from SERVICE_ADMIN_KEY)
  admin accounts list | create [--name N] [--owner O]
  admin keys list <account-id> | create <account-id> [--name N] | revoke <key-id>   (API keys of accounts)
  admin webhooks list <account-id> | create <account-id> --webhook-url U [--events a,b] [--name N] | test <webhook-id>
The account id may also be given as --account <account-id>, as search takes it.`,
  serve: `Usage: hashproof serve [--port P] [--database URL] [--mode demo|x402]  (the same as npm start)

SIGINT and SIGTERM stop the service (in-flight requests finish); SIGHUP makes it read its signing keys
again (after hashproof keys rotate), without a stop.`,
  keys: `Usage: hashproof keys <init|list|rotate|export-public> [--keys-dir DIR] [--json]

The service's signing keys (HMAC, Ed25519 receipt, log, TSA), worked on as files in SIGNING_KEYS_DIR
(or --keys-dir; the default is the service's, docs/deploy.md), with no service running. Not the API keys
of accounts: those are hashproof admin keys, over HTTP.
  init [--public-base-url URL]   create every missing key (the TSA certificate names the host of
                                 PUBLIC_BASE_URL or --public-base-url); an existing key is never touched
  list                           every key: use, id, algorithm, validFrom, validUntil, active/retired/pending
  rotate [--activate-in 5m]      new HMAC and receipt keys that sign from now + the delay (default 5m;
                                 0 for at once); old keys keep verifying. The log key and the TSA are not
                                 rotated. Running instances start signing with the new keys at that time
                                 once they have read them: send each SIGHUP before then
  export-public [--out F] [--public-base-url URL]
                                 the public key manifest, as GET /.well-known/hashproof-keys.json serves it
See docs/operations.md, "Rotating signing keys".`,
  mcp: `Usage: hashproof mcp [--url U] [--api-key K] [--timeout S]

A Model Context Protocol server on standard input and output, for an agent host on this machine to
start (docs/agents.md). Tools: stamp_file, stamp_hash, verify_file, get_proof, search_proofs. It talks
to the service as the other commands do (HASHPROOF_URL, HASHPROOF_API_KEY, HASHPROOF_STATE_DIR) and
pays new proofs with HASHPROOF_WALLET_KEY, as stamp does. Standard output carries protocol messages
only; logs go to standard error. It runs until the host closes its standard input.`,
  monitor: `Usage: hashproof monitor [--url U] [--once] [--interval-ms N] [--max-entries N] [--keys manifest.json] [--timeout S]
       [--witness VKEY]… [--witness-quorum N]

Follows the service's transparency log. For each new checkpoint it checks the signature with the log
key (of --keys, a saved key manifest, or the service's), its consistency with the checkpoint seen before
(remembered in HASHPROOF_STATE_DIR), and that the entries added since the last check hash to the
log's tiles and the tiles to the checkpoint's root. Prints one line per checkpoint checked and looks
again every --interval-ms (default 60000); --once looks once. A pass checks at most --max-entries
entries (default 100000; the rest at the next pass, as its line says), in bounded memory whatever the
log's size. Exits 1 at the first failure (a fork is "log fork detected: …"), 0 after --once when
everything held, 3 when the log could not be checked (with --once; else it looks again later).
With --witness VKEY (repeatable) and --witness-quorum N (default: all given), a checkpoint counts only
when at least N of those witnesses cosigned it: one without is not looked into ("checkpoint not
counted: …", exit 3 with --once, else looked at again later); a cosignature of a given witness that
does not verify is "log checkpoint rejected: …", exit 1.`,
  backup: `Usage: hashproof backup --out <dir>

Copies, into an empty directory (0700, files 0600): the record of the log's latest published checkpoint
(LOG_STATE_DIR), the signing keys (SIGNING_KEYS_DIR) and, for the embedded database (DATABASE_URL
sqlite:…), one consistent copy of it taken while the service keeps running. PostgreSQL is backed up
with pg_dump or continuous archiving (docs/operations.md); this command then copies the keys and the
record. A backup.json lists every file with its SHA-256.`,
  restore: `Usage: hashproof restore --from <dir> [--force]

Puts a backup back, the service stopped: the keys into SIGNING_KEYS_DIR (missing ones only; another key
of the same name stops the restore), the log's record into LOG_STATE_DIR (added to; a newer record
already there stays the one that counts), and the embedded database into DATABASE_URL's file (--force
replaces an existing one). Every file is checked against backup.json first. A database older than
what the log published since is refused by the service on start (/health says why): see
docs/operations.md.`,
  witness: `Usage: hashproof witness --keys-dir <dir> --state-dir <dir> --log <log verifier key>…
                         [--listen 127.0.0.1:8090] [--name N]

Runs a witness (C2SP tlog-witness, tlog-cosignature v1 with Ed25519) for the logs named by --log, each
by the verifier key of its checkpoints (<origin>+<key id>+<key>, as the service's /log/checkpoint is
signed; repeatable). On the first start in an empty --keys-dir it makes its key (witness-key.json,
mode 0600; --name names it, by default hashproof-witness/<hex>), writes its verifier key to
witness.vkey and prints it; later starts reuse it. It answers POST /add-checkpoint (old size,
consistency proof, signed checkpoint) with its cosignature line, only for a checkpoint consistent with
the latest one it cosigned, whose size and root it keeps in --state-dir, written to disk before it
answers. GET /<SHA-256 of the origin, hex>/checkpoint gives that checkpoint to monitors. Runs until
SIGINT or SIGTERM. See docs/witness.md.`,
} satisfies Record<string, string>;
