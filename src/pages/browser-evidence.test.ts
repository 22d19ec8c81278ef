import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACTS, openTab, withBrowserBench } from '../../test/browser.ts';
import { api } from '../../test/helper.ts';
import { createProof } from '../../test/pages.ts';
import { eventually } from '../../test/wait.ts';

/** The demo's idempotency key and the proof page's chain of evidence, in Debian's Chromium. */
const TIMEOUT = { timeout: 60_000 };
const bench = withBrowserBench();

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

async function proofsOf(contentHash: string): Promise<string[]> {
  const res = await api(
    bench.server.baseUrl,
    `/api/proofs/search?contentHash=${encodeURIComponent(contentHash)}`,
  );
  assert.equal(res.status, 200, res.text);
  return res.body.proofs.map((proof: { id: string }) => proof.id);
}

describe('in a real browser', () => {
  test(
    'stamping the same file with the same label twice on /demo gives the proof already made',
    TIMEOUT,
    async () => {
      const content = `demo twice ${Math.random()}\n`;
      const file = path.join(bench.workDir, 'twice.txt');
      writeFileSync(file, content);
      const hash = `sha256:${sha256(content)}`;
      const label = 'Twice stamped';
      const { page, errors } = await openTab(bench.browser);
      const keys: string[] = [];
      page.on('request', (request) => {
        if (request.method() === 'POST') keys.push(JSON.parse(request.postData() ?? '{}').idempotencyKey);
      });
      const stamp = async () => {
        await page.goto(`${bench.server.baseUrl}/demo`);
        await page.locator('#demo-file').setInputFiles(file);
        await page.locator('#demo-hash', { hasText: /^sha256:/ }).waitFor();
        await page.locator('#demo-label').fill(label);
        const answer = page.waitForResponse((r) => r.url().endsWith('/api/proof/notarize'));
        await page.locator('#demo-submit').click();
        return answer;
      };

      // A new proof: the page opens it at once.
      assert.equal((await stamp()).status(), 200);
      await page.waitForURL(/\/proof\/proof_[0-9A-Z]{26}$/);
      const id = new URL(page.url()).pathname.slice('/proof/'.length);
      assert.deepEqual(await proofsOf(hash), [id]);

      // The same file and label again: the proof already made, and the page says so.
      const second = (await (await stamp()).json()) as { idempotentReplay: boolean; proof: { id: string } };
      assert.equal(second.idempotentReplay, true);
      assert.equal(second.proof.id, id);
      await page.locator('#demo-status', { hasText: /^Already stamped/ }).waitFor();
      const link = page.locator('#demo-proof');
      assert.equal(await link.isVisible(), true);
      assert.equal(await link.getAttribute('href'), `/proof/${id}`);
      assert.deepEqual(await proofsOf(hash), [id], 'no second proof');

      // The key is the one `hashproof stamp` derives for this hash and label.
      const expected = 'stamp-' + sha256(`${hash}\n${label}`).slice(0, 40);
      assert.deepEqual(keys, [expected, expected]);

      await link.click();
      await page.waitForURL(new RegExp(`/proof/${id}$`));
      assert.deepEqual(errors, []);
      await page.close();
    },
  );

  test("the proof page draws the chain of evidence with the proof's own values", TIMEOUT, async () => {
    const proof = await createProof(bench.server, { label: 'chain of evidence' });
    const log = await eventually(
      async () => (await api(bench.server.baseUrl, `/api/proofs/${proof.id}`)).body.proof.log,
      { what: 'the proof enters the log' },
    );
    const { page, errors } = await openTab(bench.browser);
    await page.goto(`${bench.server.baseUrl}/proof/${proof.id}`);
    const chain = page.getByRole('figure', { name: /chain of evidence/ });
    assert.equal(await chain.getAttribute('id'), 'evidence-chain');
    await chain.scrollIntoViewIfNeeded();
    assert.equal(await chain.isVisible(), true);

    const steps = chain.locator('li');
    assert.equal(await steps.count(), 5);
    const text = (i: number) => steps.nth(i).innerText();
    const hex = proof.contentHash.slice('sha256:'.length);
    assert.match(await text(0), new RegExp(`Content hash\\s+sha256:${hex.slice(0, 12)}…`));
    assert.match(await text(2), new RegExp(`leaf ${log.leafIndex} of \\d+`));
    assert.match(await text(2), /in place/);
    assert.match(await text(3), /signed by the log key/);
    // This server anchors with no outside authority: the last step says so rather than pretend.
    assert.match(await text(4), /not used here/);
    for (let i = 1; i < 5; i++) {
      const [box, previous] = [await steps.nth(i).boundingBox(), await steps.nth(i - 1).boundingBox()];
      assert.ok(
        box && previous && box.width > 0 && box.x > previous.x,
        `step ${i} is right of step ${i - 1}`,
      );
    }

    const evidence = page.locator('#proof-evidence');
    assert.match(await evidence.innerText(), new RegExp(`leaf ${log.leafIndex}`));
    assert.equal(await evidence.locator(`a[href="/api/proofs/${proof.id}/timestamp.tsr"]`).count(), 1);
    assert.ok((await page.locator('a[href="/.well-known/hashproof-keys.json"]').count()) >= 1);
    await page.locator('section[aria-labelledby="evidence-title"]').screenshot({
      path: path.join(ARTIFACTS, 'proof-evidence.png'),
    });

    // On a phone the steps stack, and nothing scrolls sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    const [top, next] = [await steps.nth(0).boundingBox(), await steps.nth(1).boundingBox()];
    assert.ok(top && next && next.y > top.y + top.height, 'the steps stack on a phone');
    const wide = await page.evaluate(`[...document.querySelectorAll('main *')]
      .filter((e) => !e.closest('pre') && e.getBoundingClientRect().right > window.innerWidth + 1)
      .map((e) => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 60))`);
    assert.deepEqual(wide, [], 'nothing wider than a phone');
    assert.ok(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth'));
    assert.deepEqual(errors, []);
    await page.close();
  });
});
