import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startServer, type TestServer } from './helper.ts';
import { START_TIMEOUT_MS } from './process.ts';

/**
 * Debian's Chromium driven by playwright-core (headless, no sandbox, no background networking). CI
 * installs it (`apt-get install chromium`); CHROMIUM_PATH overrides the path.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}: apt-get install -y chromium`);
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    // A start may take minutes on a busy machine; a Chromium that exits fails the launch at once.
    timeout: START_TIMEOUT_MS,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export interface Watched {
  page: Page;
  errors: string[];
  dialogs: string[];
}

/** A new tab that records console errors, uncaught exceptions (CSP violations among them) and dialogs. */
export async function openTab(browser: Browser): Promise<Watched> {
  const page = await browser.context.newPage();
  const watched: Watched = { page, errors: [], dialogs: [] };
  page.on('console', (message) => {
    if (message.type() === 'error') watched.errors.push(message.text());
  });
  page.on('pageerror', (error) => watched.errors.push(error.message));
  page.on('dialog', (dialog) => {
    watched.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return watched;
}

/** Where the browser tests leave their screenshots (not committed). */
export const ARTIFACTS = path.resolve(import.meta.dirname, '../artifacts');

interface BrowserBench {
  server: TestServer;
  browser: Browser;
  /** A scratch folder for the files a test picks in the browser. */
  workDir: string;
}

/** A service, Chromium and a scratch folder, started before a test file's tests and removed after. */
export function withBrowserBench(): BrowserBench {
  const bench = {} as BrowserBench;
  before(async () => {
    bench.server = await startServer();
    bench.workDir = mkdtempSync(path.join(os.tmpdir(), 'hashproof-files-'));
    mkdirSync(ARTIFACTS, { recursive: true });
    bench.browser = await launchBrowser();
  });
  after(async () => {
    await bench.browser?.close();
    await bench.server?.close();
    bench.server?.cleanup();
    if (bench.workDir) rmSync(bench.workDir, { recursive: true, force: true });
  });
  return bench;
}
