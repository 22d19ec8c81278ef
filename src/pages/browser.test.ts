import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, openTab as openBrowserTab, withBrowserBench } from '../../test/browser.ts';
import { api, startServer, type TestServer } from '../../test/helper.ts';
import { createProof, x402Env, XSS_LABEL } from '../../test/pages.ts';

/** The pages in a real browser (test/browser.ts). */
const TIMEOUT = { timeout: 60_000 };
const bench = withBrowserBench();

const openTab = () => openBrowserTab(bench.browser);

function writeFile(name: string, content: string | Buffer): { file: string; hash: string } {
  const file = path.join(bench.workDir, name);
  writeFileSync(file, content);
  return { file, hash: `sha256:${createHash('sha256').update(content).digest('hex')}` };
}

describe('in a real browser', () => {
  test(
    'the demo shows no link to a proof before there is one: nothing marked hidden shows',
    TIMEOUT,
    async () => {
      const { page, errors } = await openTab();
      await page.goto(`${bench.server.baseUrl}/demo`);
      const hidden = page.locator('[hidden]');
      assert.ok((await hidden.count()) > 0);
      assert.equal(await page.locator('#demo-proof').isVisible(), false);
      for (const element of await hidden.all()) assert.equal(await element.isVisible(), false);
      assert.deepEqual(errors, []);
      await page.close();
    },
  );

  test(
    'the demo hashes a real file locally, creates a proof and opens a page with the right hash',
    TIMEOUT,
    async () => {
      const content = Buffer.concat([Buffer.from('hashproof browser test\n'), Buffer.alloc(300_000, 7)]);
      const { file, hash } = writeFile('report.bin', content);
      const { page, errors, dialogs } = await openTab();
      const requests: string[] = [];
      page.on('request', (request) =>
        requests.push(`${request.method()} ${request.url()} ${request.postData() ?? ''}`),
      );

      await page.goto(`${bench.server.baseUrl}/demo`);
      await page.locator('#demo-file').setInputFiles(file);
      await page.locator('#demo-hash', { hasText: /^sha256:/ }).waitFor();
      assert.equal(await page.locator('#demo-hash').textContent(), hash);
      assert.equal(
        await page.locator('#demo-existing').getAttribute('href'),
        `/proofs?q=${encodeURIComponent(hash)}`,
      );

      await page.locator('#demo-label').fill('Browser test report');
      await page.locator('#demo-submit').click();
      await page.waitForURL(/\/proof\/proof_[0-9A-Z]{26}$/);
      assert.equal(await page.locator('#content-hash').textContent(), hash);
      assert.equal(await page.locator('h1').textContent(), 'Browser test report');
      assert.match((await page.locator('.verdict').textContent()) ?? '', /Signature verified/);
      assert.match((await page.locator('[data-local-for]').textContent()) ?? '', /your time/);
      assert.equal(await page.locator('button[data-copy="content-hash"]').isVisible(), true);

      // Only the hash left the browser: no request carried the file's bytes.
      const posts = requests.filter((r) => r.startsWith('POST'));
      assert.equal(posts.length, 1);
      assert.ok(posts[0]?.includes(hash) && !posts[0].includes('hashproof browser test'));

      const badge = page.locator('img[src$="/badge.svg"]');
      await badge.scrollIntoViewIfNeeded();
      assert.ok(
        (await badge.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)) > 100,
      );

      await page.screenshot({ path: path.join(ARTIFACTS, 'proof-page.png'), fullPage: true });
      await page.setViewportSize({ width: 390, height: 844 });
      assert.ok(
        await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'),
        'no horizontal scrolling on a phone',
      );
      await page.screenshot({ path: path.join(ARTIFACTS, 'proof-page-phone.png'), fullPage: true });

      // The proof page checks a file against the proof, locally.
      await page.locator('#compare-file').setInputFiles(file);
      await page.locator('#compare-result', { hasText: /^Match/ }).waitFor();
      const other = writeFile('other.txt', 'something else');
      await page.locator('#compare-file').setInputFiles(other.file);
      await page.locator('#compare-result', { hasText: /^No match/ }).waitFor();
      assert.ok((await page.locator('#compare-result').textContent())?.includes(other.hash));

      assert.deepEqual(errors, []);
      assert.deepEqual(dialogs, []);
      await page.close();
    },
  );

  test('a hostile label renders as text on every page, and no dialog opens', TIMEOUT, async () => {
    const proof = await createProof(bench.server, {
      label: XSS_LABEL,
      metadata: { '<img src=x onerror=alert(2)>': 1 },
    });
    const { page, errors, dialogs } = await openTab();
    for (const pathname of [
      `/proof/${proof.id}`,
      '/proofs',
      `/proofs?q=${encodeURIComponent(XSS_LABEL)}`,
      '/',
      '/dashboard',
    ]) {
      await page.goto(`${bench.server.baseUrl}${pathname}`);
      assert.ok(
        (await page.getByText(XSS_LABEL, { exact: true }).count()) >= 1,
        `${pathname}: the label is shown as text`,
      );
      assert.equal(await page.locator('script:not([src])').count(), 0, pathname);
      assert.equal(await page.locator('main img[src="x"]').count(), 0, pathname);
    }
    await page.goto(`${bench.server.baseUrl}/proof/${proof.id}`);
    assert.equal(await page.locator('h1').textContent(), XSS_LABEL);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('the badge renders on its own as an image', TIMEOUT, async () => {
    const proof = await createProof(bench.server, { label: 'badge check' });
    const { page, errors } = await openTab();
    await page.setContent(`<img id="b" src="${bench.server.baseUrl}/proof/${proof.id}/badge.svg">`);
    const size = await page.locator('#b').evaluate((img) => {
      const { naturalWidth, naturalHeight } = img as unknown as {
        naturalWidth: number;
        naturalHeight: number;
      };
      return [naturalWidth, naturalHeight];
    });
    assert.ok((size[0] ?? 0) > 100, `width ${size[0]}`);
    assert.equal(size[1], 20);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('no page logs a console error or breaks the Content-Security-Policy', TIMEOUT, async () => {
    const proof = await createProof(bench.server, { label: 'console check', metadata: { a: 1 } });
    const paths = [
      '/',
      '/demo',
      '/proofs',
      '/dashboard',
      '/agents',
      '/pricing',
      '/actions',
      '/trust',
      '/marketplace',
    ];
    for (const pathname of [...paths, `/proof/${proof.id}`]) {
      const { page, errors } = await openTab();
      const response = await page.goto(`${bench.server.baseUrl}${pathname}`);
      assert.equal(response?.status(), 200, pathname);
      await page.waitForLoadState('load');
      const hasStyles = await page.evaluate("getComputedStyle(document.body).margin === '0px'");
      assert.ok(hasStyles, `${pathname}: the stylesheet applied`);
      assert.deepEqual(errors, [], pathname);
      await page.close();
    }
    // The 404 page: the browser reports the 404 status of the document itself, and nothing else.
    const { page, errors } = await openTab();
    const response = await page.goto(`${bench.server.baseUrl}/proof/proof_01ARZ3NDEKTSV4RRFFQ69G5FAV`);
    assert.equal(response?.status(), 404);
    assert.ok(
      errors.every((e) => /status of 404/.test(e)),
      errors.join('\n'),
    );
    assert.equal(await page.locator('h1').textContent(), 'There is no proof with this id');
    await page.close();
  });

  test(
    '/agents shows both MCP configurations as /api/quickstart gives them, ready to copy',
    TIMEOUT,
    async () => {
      const { mcp } = (await api(bench.server.baseUrl, '/api/quickstart')).body;
      assert.equal(mcp.remote.url, `${bench.server.baseUrl}/mcp`);
      const { page, errors } = await openTab();
      await page.goto(`${bench.server.baseUrl}/agents`);
      assert.equal(await page.getByRole('heading', { name: 'AI agents (MCP)' }).isVisible(), true);
      for (const [id, configuration] of [
        ['mcp-remote-config', mcp.remote.configuration],
        ['mcp-local-config', mcp.local.configuration],
      ] as const) {
        const block = page.locator(`#${id}`);
        await block.scrollIntoViewIfNeeded();
        assert.equal(await block.isVisible(), true, id);
        // What a reader selects and copies is the configuration file itself.
        assert.deepEqual(JSON.parse((await block.textContent()) ?? ''), configuration, id);
        assert.equal(await page.locator(`button[data-copy="${id}"]`).isVisible(), true, `${id}: copy button`);
      }
      await page.setViewportSize({ width: 390, height: 844 });
      assert.ok(
        await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'),
        'no horizontal scrolling on a phone: the blocks scroll inside themselves',
      );
      assert.deepEqual(errors, []);
      await page.close();
    },
  );

  test('keyboard users can skip to the content and reach the demo controls', TIMEOUT, async () => {
    const { page } = await openTab();
    await page.goto(`${bench.server.baseUrl}/demo`);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');
    await page.keyboard.press('Enter');
    // Following the link is a navigation within the page; wait for it rather than read the URL at once.
    await page.waitForURL(/#main$/, { timeout: 5000 });
    assert.match(page.url(), /#main$/);
    await page.locator('#demo-file').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.id'), 'demo-label');
    await page.close();
  });
});

describe('in a real browser, x402 mode', () => {
  let paid: TestServer;
  before(async () => (paid = await startServer({ env: await x402Env() })));
  after(async () => {
    await paid.close();
    paid.cleanup();
  });

  test('the demo hashes the file and shows the price instead of creating a proof', TIMEOUT, async () => {
    const { file, hash } = writeFile('paid.txt', 'a file in x402 mode');
    const { page, errors } = await openTab();
    const posts: string[] = [];
    page.on('request', (request) => void (request.method() === 'POST' && posts.push(request.url())));
    await page.goto(`${paid.baseUrl}/demo`);
    assert.match((await page.locator('.panel-paid h2').textContent()) ?? '', /\$0\.007/);
    await page.locator('#demo-file').setInputFiles(file);
    await page.locator('#demo-hash', { hasText: /^sha256:/ }).waitFor();
    assert.equal(await page.locator('[data-fill-hash]').textContent(), hash);
    assert.equal(await page.locator('#demo-submit').count(), 0);
    assert.deepEqual(posts, []);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
