import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ADMIN_KEY,
  adminHeaders,
  api,
  loggedProof,
  notarizeBody,
  sampleHash,
  startServer,
  type TestServer,
} from '../../test/helper.ts';
import { mainnetHeaders, startHeaderServer, type HeaderServer } from '../../test/bitcoin-headers.ts';
import {
  startHostileAuthority,
  type AuthorityHub,
  type HostileAuthority,
  type HostileAuthorityMode,
} from '../../test/hostile-authority.ts';
import {
  startHostileCalendar,
  type HostileCalendar,
  type HostileCalendarMode,
} from '../../test/hostile-calendar.ts';
import { startCalendar } from '../../test/ots-calendar.ts';
import { reference } from '../../test/ots-reference.ts';
import { eventually } from '../../test/wait.ts';

/**
 * Anchoring against authorities and calendars that lie, stall, flood or point elsewhere
 * (docs/security.md, "Hostile authorities and calendars"): each is a real HTTP peer on loopback with
 * one misbehaviour, and the service is asked, through its API, pages, metrics and logs, what it did.
 */

const ALLOW = { ANCHOR_ALLOW_PRIVATE_URLS: 'true', ANCHOR_INTERVAL_MS: '100' };

interface Stand {
  server: TestServer;
  authorities: HostileAuthority[];
  calendars: HostileCalendar[];
  close(): Promise<void>;
}

/** A service anchoring with these authorities and calendars (their URLs as given by `urls`). */
async function stand(
  peers: { authorities?: HostileAuthorityMode[]; calendars?: HostileCalendarMode[]; hub?: AuthorityHub },
  env: Record<string, string> = ALLOW,
  urls: { authority?: (url: string) => string; calendar?: (url: string) => string } = {},
): Promise<Stand> {
  const authorities = await Promise.all(
    (peers.authorities ?? []).map((m) => startHostileAuthority(m, peers.hub)),
  );
  const calendars = await Promise.all((peers.calendars ?? []).map((m) => startHostileCalendar(m)));
  const server = await startServer({
    env: {
      SERVICE_ADMIN_KEY: ADMIN_KEY,
      ANCHOR_TSA_URLS: authorities.map((a) => (urls.authority ?? String)(a.url)).join(','),
      ANCHOR_OTS_CALENDARS: calendars.map((c) => (urls.calendar ?? String)(c.url)).join(','),
      ...env,
    },
  });
  return {
    server,
    authorities,
    calendars,
    close: async () => {
      await server.close();
      server.cleanup();
      await Promise.all([...authorities, ...calendars].map((peer) => peer.close()));
    },
  };
}

async function notarize(server: TestServer, n: number): Promise<{ id: string; contentHash: string }> {
  const res = await api(server.baseUrl, '/api/proof/notarize', {
    method: 'POST',
    body: notarizeBody({ contentHash: sampleHash(n) }),
  });
  assert.equal(res.status, 200, res.text);
  await loggedProof(server.baseUrl, res.body.proof.id);
  return res.body.proof;
}

const anchorsOf = (server: TestServer, id: string) =>
  eventually(() => api(server.baseUrl, `/api/proofs/${id}/anchors`), {
    what: `the anchor of ${id}`,
    until: (res) => res.status === 200,
  });

type Endpoint = { url: string; state: string; lastError: string | null };
/** /api/status once `until` holds for its anchoring endpoints. */
const statusWhen = (server: TestServer, what: string, until: (endpoints: Endpoint[]) => boolean) =>
  eventually(() => api(server.baseUrl, '/api/status'), {
    what,
    until: (res) => until(res.body.components.anchors.endpoints ?? []),
  });

describe('hostile calendars', () => {
  test('a pending attestation naming another address is kept in the .ots but never fetched; the upgrade is asked of the calendar that issued it', async () => {
    const s = await stand({ calendars: ['elsewhere'] });
    try {
      const [calendar] = s.calendars as [HostileCalendar];
      const proof = await notarize(s.server, 1);
      await anchorsOf(s.server, proof.id);
      // The upgrade pass asks the configured calendar, whatever address its answer named.
      await calendar.requests.until(
        (items) => items.some((r) => r.method === 'GET' && r.path.startsWith('/timestamp/')),
        { what: 'an upgrade request to the configured calendar' },
      );
      assert.equal(calendar.elsewhereConnections.items.length, 0, 'the named address was contacted');
      const res = await fetch(`${s.server.baseUrl}/api/proofs/${proof.id}/proof.ots`);
      assert.equal(res.status, 200);
      const dir = mkdtempSync(path.join(tmpdir(), 'hostile-ots-'));
      try {
        const file = path.join(dir, 'p.ots');
        writeFileSync(file, Buffer.from(await res.arrayBuffer()));
        const [answer] = await reference('check', {
          headers: {},
          files: [{ path: file, contentHash: proof.contentHash.slice(7) }],
        });
        assert.equal(answer.digestMatches, true);
        assert.deepEqual(
          answer.attestations.map((a: { kind: string; uri: string }) => [a.kind, a.uri]),
          [['pending', calendar.elsewhereUri]],
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      // /api/status says nothing of the named address either.
      const status = await api(s.server.baseUrl, '/api/status');
      assert.ok(!status.text.includes(calendar.elsewhereUri));
      assert.equal(calendar.elsewhereConnections.items.length, 0);
    } finally {
      await s.close();
    }
  });

  test('an answer with 220 pending attestations, or built for hashing cost, is refused and nothing of it is stored', async () => {
    const s = await stand({ authorities: ['ok'], calendars: ['many-pendings', 'hashing-cost'] });
    try {
      const proof = await notarize(s.server, 2);
      const [many, costly] = s.calendars.map((c) => c.url) as [string, string];
      const status = await statusWhen(s.server, 'the refused calendars in /api/status', (endpoints) =>
        [many, costly].every((url) => endpoints.some((e) => e.url === url && e.state === 'failing')),
      );
      const errorOf = (url: string) =>
        status.body.components.anchors.endpoints.find((e: Endpoint) => e.url === url).lastError as string;
      assert.match(errorOf(many), /220 pending attestations, over 16; refused/);
      assert.match(errorOf(costly), /the answer hashes over 65536 bytes; refused/);
      const anchors = await anchorsOf(s.server, proof.id);
      assert.deepEqual(anchors.body.opentimestamps, []);
      assert.equal(anchors.body.rfc3161.length, 1);
      assert.equal((await api(s.server.baseUrl, `/api/proofs/${proof.id}/proof.ots`)).status, 409);
    } finally {
      await s.close();
    }
  });

  test('upgrades that never answer do not delay the anchoring of a new checkpoint', async () => {
    const s = await stand({ calendars: ['hang-upgrades'] });
    try {
      const [calendar] = s.calendars as [HostileCalendar];
      const first = await notarize(s.server, 3);
      await anchorsOf(s.server, first.id);
      await calendar.requests.until(
        (items) => items.some((r) => r.method === 'GET' && r.path.startsWith('/timestamp/')),
        { what: 'a hanging upgrade request' },
      );
      const second = await notarize(s.server, 4);
      const anchored = await anchorsOf(s.server, second.id);
      assert.equal(anchored.body.opentimestamps.length, 1);
      // The new checkpoint went to the calendar while an upgrade request still hung there.
      const posts = calendar.requests.items.filter((r) => r.method === 'POST');
      assert.ok(posts.length >= 2);
      assert.ok(
        posts.slice(1).some((r) => r.hangingUpgrades > 0),
        `every later submission waited for the hanging upgrades: ${JSON.stringify(posts)}`,
      );
    } finally {
      await s.close();
    }
  });

  test('the .ots file of an anchor is assembled once, when it is stored, not rebuilt per download', async () => {
    const s = await stand({ calendars: ['hang-upgrades'] });
    try {
      const proof = await notarize(s.server, 5);
      await anchorsOf(s.server, proof.id);
      const download = async () => {
        const res = await fetch(`${s.server.baseUrl}/api/proofs/${proof.id}/proof.ots`);
        assert.equal(res.status, 200);
        return Buffer.from(await res.arrayBuffer());
      };
      const before = await download();
      // The calendar's answer as stored is no longer read for a download: spoiling it changes nothing.
      await s.server.ctx.database.db
        .updateTable('anchor_calendars')
        .set({ reply: Buffer.from('not a timestamp').toString('base64') })
        .execute();
      assert.deepEqual(await download(), before);
    } finally {
      await s.close();
    }
  });

  test('a claimed Bitcoin block is shown as claimed, never confirmed, while no header is checked', async () => {
    const s = await stand({ calendars: ['claims-block'] });
    try {
      const proof = await notarize(s.server, 6);
      const claimed = await eventually(() => api(s.server.baseUrl, `/api/proofs/${proof.id}/anchors`), {
        what: 'the claimed attestation',
        until: (res) =>
          res.body?.opentimestamps?.[0]?.status !== undefined &&
          res.body.opentimestamps[0].status !== 'pending',
      });
      assert.deepEqual(claimed.body.opentimestamps, [
        { calendar: s.calendars[0]!.url, status: 'claimed', bitcoinHeight: 1 },
      ]);
      const page = (await api(s.server.baseUrl, `/proof/${proof.id}`)).text;
      assert.ok(!/confirmed/i.test(page), 'the page says confirmed');
      assert.match(page, /claimed/);
    } finally {
      await s.close();
    }
  });

  test('a claimed Bitcoin block whose real header does not hold the attested root is refused', async () => {
    const headers = await startHeaderServer();
    headers.add(1, mainnetHeaders().block1);
    const s = await stand({ calendars: ['claims-block'] }, { ...ALLOW, BITCOIN_HEADERS_URL: headers.url });
    try {
      const proof = await notarize(s.server, 7);
      const calendarUrl = s.calendars[0]!.url;
      const status = await statusWhen(s.server, 'the refused claim in /api/status', (endpoints) =>
        endpoints.some((e) => e.url === calendarUrl && e.state === 'failing'),
      );
      const endpoint = status.body.components.anchors.endpoints.find((e: Endpoint) => e.url === calendarUrl);
      assert.match(endpoint.lastError, /claims Bitcoin block 1 .*Merkle root .*refused/);
      assert.ok(headers.requests.items.includes('/block-height/1'));
      const anchors = await api(s.server.baseUrl, `/api/proofs/${proof.id}/anchors`);
      assert.deepEqual(anchors.body.opentimestamps, [{ calendar: calendarUrl, status: 'pending' }]);
      await s.server.logged(
        (lines) => lines.some((l) => l.includes('claims Bitcoin block 1') && l.includes('refused')),
        'the refusal logged',
      );
    } finally {
      await s.close();
      await headers.close();
    }
  });
});

describe('hostile authorities', () => {
  test('tokens dated 1990 or 2099 are not stored; a token of the right time is', async () => {
    const s = await stand({ authorities: ['dated', 'dated', 'ok'] });
    const [old, future] = s.authorities as [HostileAuthority, HostileAuthority];
    future.datedAt = new Date('2099-01-01T00:00:00Z');
    try {
      const proof = await notarize(s.server, 10);
      const status = await statusWhen(s.server, 'the two dated authorities failing', (endpoints) =>
        [old.url, future.url].every((url) => endpoints.some((e) => e.url === url && e.state === 'failing')),
      );
      const errors = status.body.components.anchors.endpoints.map((e: Endpoint) => e.lastError);
      assert.ok(errors.some((e: string | null) => e?.includes('dated 1990-01-01T00:00:00.000Z')));
      assert.ok(errors.some((e: string | null) => e?.includes('dated 2099-01-01T00:00:00.000Z')));
      const anchors = await anchorsOf(s.server, proof.id);
      assert.deepEqual(
        anchors.body.rfc3161.map((t: { url: string }) => t.url),
        [s.authorities[2]!.url],
      );
    } finally {
      await s.close();
    }
  });

  test('loopback authorities and calendars are refused unless ANCHOR_ALLOW_PRIVATE_URLS, a name that resolves to loopback too', async () => {
    const calendar = await startCalendar();
    const s = await stand(
      { authorities: ['ok'] },
      { ANCHOR_INTERVAL_MS: '100', ANCHOR_OTS_CALENDARS: calendar.url },
      { authority: (url) => url.replace('127.0.0.1', 'localhost') },
    );
    try {
      await notarize(s.server, 11);
      const status = await statusWhen(
        s.server,
        'both endpoints refused',
        (endpoints) => endpoints.length === 2 && endpoints.every((e) => e.state === 'failing'),
      );
      for (const endpoint of status.body.components.anchors.endpoints)
        assert.match(endpoint.lastError, /not a public address, refused/);
      assert.equal(s.authorities[0]!.requests.items.length, 0);
      assert.equal(calendar.requests.items.length, 0);
    } finally {
      await s.close();
      await calendar.close();
    }
  });

  test('a redirect is not followed, an oversized or malformed answer is refused', async () => {
    const s = await stand({ authorities: ['redirect', 'huge', 'malformed', 'ok'], calendars: ['redirect'] });
    const [redirect, huge, malformed] = s.authorities as [
      HostileAuthority,
      HostileAuthority,
      HostileAuthority,
    ];
    const [calendar] = s.calendars as [HostileCalendar];
    redirect.redirectTo = calendar.elsewhereUri;
    try {
      const proof = await notarize(s.server, 12);
      const status = await statusWhen(
        s.server,
        'four failing endpoints',
        (endpoints) => endpoints.filter((e) => e.state === 'failing').length === 4,
      );
      const errorOf = (url: string) =>
        status.body.components.anchors.endpoints.find((e: Endpoint) => e.url === url).lastError as string;
      assert.match(errorOf(redirect.url), /redirected \(HTTP 302\), not followed/);
      assert.match(errorOf(calendar.url), /redirected \(HTTP 302\), not followed/);
      assert.match(errorOf(huge.url), /over 262144/);
      assert.match(errorOf(malformed.url), /not a DER TimeStampResp/);
      assert.equal(calendar.elsewhereConnections.items.length, 0);
      const anchors = await anchorsOf(s.server, proof.id);
      assert.deepEqual(
        anchors.body.rfc3161.map((t: { url: string }) => t.url),
        [s.authorities[3]!.url],
      );
    } finally {
      await s.close();
    }
  });

  test('one anchoring pass asks at most 4 authorities at once, the others as those answer', async () => {
    const hub: AuthorityHub = { hanging: 0 };
    const s = await stand({ authorities: Array(6).fill('hang') as HostileAuthorityMode[], hub });
    const arrivals = () => s.authorities.flatMap((a) => a.requests.items);
    try {
      await notarize(s.server, 15);
      await eventually(() => hub.hanging, { what: 'four requests hanging', until: (n) => n === 4 });
      assert.equal(arrivals().length, 4);
      // As those four end, the two others are asked.
      s.authorities.forEach((a) => a.release());
      await eventually(arrivals, { what: 'the two others', until: (items) => items.length >= 6 });
      const most = Math.max(...arrivals().map((r) => r.hangingAtArrival));
      assert.ok(most <= 3, `a request arrived while ${most} others hung`);
    } finally {
      await s.close();
    }
  });

  test('credentials in authority and calendar URLs are used, and shown nowhere', async () => {
    const withSecret = (user: string, key: string) => (url: string) =>
      url.replace('http://', `http://${user}:pw-SECRET-${user}@`) + `/stamp?apikey=SECRET-${key}`;
    const s = await stand({ authorities: ['ok'], calendars: ['hang-upgrades'] }, ALLOW, {
      authority: withSecret('tsa', 'A'),
      calendar: withSecret('cal', 'B'),
    });
    const [authority] = s.authorities as [HostileAuthority];
    const [calendar] = s.calendars as [HostileCalendar];
    try {
      const proof = await notarize(s.server, 13);
      await anchorsOf(s.server, proof.id);
      const basic = (user: string) => `Basic ${Buffer.from(`${user}:pw-SECRET-${user}`).toString('base64')}`;
      const asked = authority.requests.items[0]!;
      assert.deepEqual([asked.path, asked.authorization], ['/stamp?apikey=SECRET-A', basic('tsa')]);
      const post = calendar.requests.items.find((r) => r.method === 'POST')!;
      assert.equal(post.path, '/stamp/digest?apikey=SECRET-B');
      assert.equal(post.authorization, basic('cal'));
      // Each endpoint fails once, so that its failure is logged and shown too.
      authority.mode = 'malformed';
      calendar.mode = 'malformed';
      await notarize(s.server, 14);
      await statusWhen(s.server, 'both failing', (endpoints) =>
        endpoints.every((e) => e.state === 'failing'),
      );
      const outputs = [
        (await api(s.server.baseUrl, '/api/status')).text,
        (await api(s.server.baseUrl, '/api/log/anchors')).text,
        (await api(s.server.baseUrl, `/api/proofs/${proof.id}/anchors`)).text,
        (await api(s.server.baseUrl, `/proof/${proof.id}`)).text,
        (await api(s.server.baseUrl, '/metrics', { headers: adminHeaders })).text,
        s.server.logs.join('\n'),
      ];
      assert.ok(outputs[0]!.includes(`${new URL(authority.url).host}/stamp`), 'the endpoint is named');
      assert.ok(outputs[4]!.includes('anchor_endpoint_consecutive_failures'));
      for (const [i, output] of outputs.entries())
        assert.ok(!/SECRET/.test(output), `output ${i} shows a secret`);
    } finally {
      await s.close();
    }
  });
});

describe('a Bitcoin attestation whose header checks', () => {
  let headers: HeaderServer;
  before(async () => {
    headers = await startHeaderServer();
  });
  after(() => headers.close());

  test('is stored as bitcoin, with the header server asked for its block', async () => {
    const calendar = await startCalendar();
    const server = await startServer({
      env: { ...ALLOW, ANCHOR_OTS_CALENDARS: calendar.url, BITCOIN_HEADERS_URL: headers.url },
    });
    try {
      const proof = await notarize(server, 20);
      await anchorsOf(server, proof.id);
      const block = calendar.confirm();
      headers.add(block.height, block.header);
      const res = await eventually(() => api(server.baseUrl, `/api/proofs/${proof.id}/anchors`), {
        what: 'the checked attestation',
        until: (r) => r.body.opentimestamps[0].status === 'bitcoin',
      });
      assert.equal(res.body.opentimestamps[0].bitcoinHeight, block.height);
      assert.ok(headers.requests.items.includes(`/block-height/${block.height}`));
    } finally {
      await server.close();
      server.cleanup();
      await calendar.close();
    }
  });
});
