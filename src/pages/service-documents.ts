import type { Static } from 'typebox';
import { Proof } from '../proofs/proof-schemas.ts';
import type { Listing, Marketplace, Status, TrustSummary } from './document-schemas.ts';
import { evidenceKinds } from './evidence.ts';
import { proofEndpoints, type ProofEndpoint } from './agent-documents.ts';
import { UNPAID } from './offering.ts';
import { documentLinks, SERVICE_NAME, SERVICE_SUMMARY, signedFields, type Facts } from './facts.ts';

/** Builders of /api/trust, /api/status and /marketplace.json, shared with their HTML pages. */

export const PROVES = [
  'that this service received the content hash (and the hash of your metadata) no later than the proof timestamp',
  'that the label, hashes and timestamp have not changed since: the HMAC signature and the Ed25519 receipt cover them',
];

export const DOES_NOT_PROVE = [
  'who created the content, or who asked for the proof',
  'what the content means, or that it is true, original or lawful',
  'anything about content whose SHA-256 differs from contentHash',
  'a legal notarization or a regulated attestation: it is evidence from one service, not from a notary',
];

export function buildTrust(
  facts: Facts,
  totals: { total: number; latestAt: string | null },
): Static<typeof TrustSummary> {
  const { ctx } = facts;
  const active = ctx.keyring.active.keyId;
  const contact = ctx.config.securityContact;
  return {
    ok: true,
    service: SERVICE_NAME,
    version: facts.version,
    baseUrl: facts.url(''),
    proves: PROVES,
    doesNotProve: DOES_NOT_PROVE,
    evidence: evidenceKinds(ctx.config, (path) => facts.url(path)),
    signing: {
      algorithm: 'hmac-sha256',
      canonicalization: 'RFC 8785 (JCS)',
      signedFields: signedFields(),
      activeKeyId: active,
      keys: ctx.keyring
        .list()
        .map((key) => ({ keyId: key.keyId, createdAt: key.createdAt, active: key.keyId === active }))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt)),
      verification:
        'HMAC-SHA256 is a symmetric signature: only this service holds the key, so it checks signatures for ' +
        'you. The verification report recomputes the signature at the time you ask and shows the exact ' +
        'signed message. Keys are never deleted, so old proofs keep verifying after a rotation. The same ' +
        'message also carries an Ed25519 receipt, an RFC 3161 token and a place in the transparency log, ' +
        'which anyone checks without this service, as each entry of the evidence says.',
      verifyUrlTemplate: facts.url('/api/verify/proofs/{id}'),
    },
    dataHandling: {
      storesContent: false,
      storesRawMetadata: false,
      storesRequestHeaders: false,
      publishedFields: Object.keys(Proof.properties).filter((field) => field !== 'verified'),
      idempotencyKeysSearchable: true,
    },
    storage: {
      engine: ctx.database.engine,
      durability:
        ctx.database.engine === 'sqlite'
          ? 'A proof is written to disk (SQLite in WAL mode, synchronous=FULL) before the service answers.'
          : 'A proof is committed to the database before the service answers.',
      retention: 'Proofs never expire and are never deleted; idempotency keys never expire either.',
    },
    proofs: totals,
    payment: facts.terms,
    security:
      contact === undefined
        ? {
            contact: null,
            note: 'No security contact is configured on this instance (SECURITY_CONTACT), so it serves no security.txt.',
            securityTxt: null,
            policy: facts.url('/trust'),
          }
        : {
            contact,
            note: 'Report a vulnerability to this contact.',
            securityTxt: facts.url('/.well-known/security.txt'),
            policy: facts.url('/trust'),
          },
  };
}

interface RuntimeState {
  startedAtMs: number;
  isDatabaseUp: boolean;
  totals: { total: number; latestAt: string | null } | null;
  anchors: Awaited<ReturnType<AppContextAnchors['status']>> | null;
  /** Each witness's state; null when the database did not answer. */
  witnesses: Awaited<ReturnType<Facts['ctx']['witnessing']['status']>> | null;
}

type AppContextAnchors = Facts['ctx']['anchors'];

export function buildStatus(facts: Facts, state: RuntimeState): Static<typeof Status> {
  const { ctx, terms } = facts;
  const now = ctx.clock.now();
  const isPaymentConfigured = !terms.required || (terms.payTo !== null && terms.network !== null);
  return {
    ok: true,
    service: SERVICE_NAME,
    version: facts.version,
    status: state.isDatabaseUp && isPaymentConfigured ? 'operational' : 'degraded',
    launch:
      terms.mode === 'x402'
        ? {
            stage: 'live',
            description: `Live: proofs cost ${terms.price}, paid with x402 on ${terms.networkName}.`,
          }
        : {
            stage: 'demo',
            description: 'Demo: proofs are free and created without payment, for trying the service out.',
          },
    mode: terms.mode,
    startedAt: new Date(state.startedAtMs).toISOString(),
    uptimeSeconds: Math.max(0, Math.floor((now - state.startedAtMs) / 1000)),
    time: new Date(now).toISOString(),
    components: {
      database: { engine: ctx.database.engine, ok: state.isDatabaseUp },
      signing: { ok: true, activeKeyId: ctx.keyring.active.keyId, keyCount: ctx.keyring.list().length },
      payments: { mode: terms.mode, ok: isPaymentConfigured, network: terms.network },
      anchors:
        state.anchors === null
          ? { enabled: ctx.anchors.enabled, ok: false }
          : state.anchors.enabled
            ? { ...state.anchors, ok: state.anchors.endpoints.every((e) => e.state !== 'failing') }
            : { enabled: false, ok: true },
      witnesses: state.witnesses ?? [],
    },
    proofs: { total: state.totals?.total ?? null, latestAt: state.totals?.latestAt ?? null },
  };
}

const FREE = { model: 'free' as const, ...UNPAID };

export function buildMarketplace(facts: Facts): Static<typeof Marketplace> {
  // The proof's terms but for what a listing does not carry (its price fields are all null in demo mode).
  const { mode, required, networkName: _name, discoveryUrl: _url, ...pricing } = facts.terms;
  // A listing names its endpoint and its input apart.
  const listed = ({ inputSchema, ...endpoint }: ProofEndpoint) => ({ endpoint, inputSchema });
  const endpoints = proofEndpoints(facts);
  const listings: Listing[] = [
    {
      id: 'hashproof.notarize',
      name: 'Timestamped hash proof',
      summary:
        'A signed, timestamped proof that a SHA-256 hash existed now, with a public page, a badge and a ' +
        'verification API. Only the hash is sent.',
      category: 'timestamping',
      tags: ['timestamp', 'sha256', 'proof', 'provenance', 'notarize'],
      ...listed(endpoints.notarize),
      pricing: { model: required ? 'fixed' : 'free', ...pricing },
      docs: facts.url('/api/quickstart'),
    },
    {
      id: 'hashproof.verify',
      name: 'Proof verification',
      summary: 'Recomputes the signature of any proof now and returns the full verification report.',
      category: 'verification',
      tags: ['verify', 'proof'],
      ...listed(endpoints.verify),
      pricing: FREE,
      docs: facts.url('/trust'),
    },
    {
      id: 'hashproof.search',
      name: 'Proof search',
      summary: 'Finds the proofs of a content hash, or by id, label, metadata hash or account.',
      category: 'search',
      tags: ['search', 'proof'],
      ...listed(endpoints.search),
      pricing: FREE,
      docs: facts.url('/api/actions'),
    },
  ];
  return {
    ok: true,
    provider: {
      name: SERVICE_NAME,
      url: facts.url(''),
      description: SERVICE_SUMMARY,
      version: facts.version,
    },
    mode,
    listings,
    links: documentLinks(facts),
  };
}
