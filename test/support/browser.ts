import { existsSync, mkdirSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { packagePath } from '../../src/platform/paths.js';
import { buildWebInterface } from '../../src/ui/build.js';

/** Debian's Chromium, which `.ci/run` installs; headless with nothing reaching for the network. */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const ARTIFACTS = packagePath('test', 'artifacts', 'ui');

/**
 * The web interface built from these sources (before the app under test starts: it serves the
 * build from memory) and the folder its screenshots land in.
 */
export async function prepareWebInterface(): Promise<void> {
  await buildWebInterface();
  mkdirSync(ARTIFACTS, { recursive: true });
}

/** Loaded on demand, not with the test files: its module graph is large and most suites never need it. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}

/**
 * A fresh browser context signed in with a key through the sign-in form, landing where it was
 * going. `prepare` runs on the context before its page opens (init scripts, listeners).
 */
export async function signedIn(
  browser: Browser,
  baseUrl: string,
  key: string,
  options: {
    landing?: string;
    colorScheme?: 'light' | 'dark';
    viewport?: { width: number; height: number };
    timezoneId?: string;
    prepare?: (context: BrowserContext, page: Page) => Promise<void> | void;
  } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const landing = options.landing ?? '/inventory';
  const context = await browser.newContext({
    viewport: options.viewport ?? { width: 1400, height: 900 },
    colorScheme: options.colorScheme ?? 'light',
    ...(options.timezoneId ? { timezoneId: options.timezoneId } : {}),
  });
  const page = await context.newPage();
  await options.prepare?.(context, page);
  await page.goto(`${baseUrl}/ui${landing}`);
  await page.waitForURL(/\/ui\/sign-in\?return_to=/);
  await page.getByLabel('API key or token').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  // the return address comes back percent-encoded as the router writes it
  await page.waitForURL(
    (target) => decodeURIComponent(target.pathname + target.search) === decodeURIComponent(`/ui${landing}`),
  );
  return { context, page };
}
