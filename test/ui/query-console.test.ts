import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { loadDemo } from '../../src/collection/demo/service.js';
import type { Sql } from '../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../support/app.js';
import { ARTIFACTS, hasChromium, launchChromium, prepareWebInterface, signedIn } from '../support/browser.js';
import { resetDatabase, testDatabase } from '../support/db.js';
import { describeWith } from '../support/dependencies.js';

const NOW = new Date('2026-11-20T15:27:00Z');
const axeSource = () => readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** No serious or critical axe-core violations on the page as it is, and a screenshot of it. */
async function checkView(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  await page.evaluate(axeSource());
  const violations = (await page.evaluate('axe.run().then((result) => result.violations)')) as AxeViolation[];
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(
    serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join('; ')})`),
    name,
  ).to.deep.equal([]);
}

describeWith(hasChromium)(
  'the query console over the demo inventory in a real Chromium (skipped outside CI when /usr/bin/chromium is missing; under CI=true a missing one fails)',
  function () {
    this.timeout(300_000);
    let sql: Sql;
    let app: TestApp;
    let browser: Browser;
    let admin: string;

    before(async () => {
      await prepareWebInterface();
      sql = (await testDatabase()).sql;
      await resetDatabase(sql);
      await loadDemo(sql, { tenantId: DEFAULT_TENANT_ID, now: NOW, batchSize: 1000, progress: () => undefined });
      app = await startTestApp();
      admin = await createKey(sql, 'adm');
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await app?.close();
    });

    /** Replaces the editor's text as a person types it. */
    const typeQuery = async (page: Page, text: string) => {
      const editor = page.getByLabel('Query', { exact: true });
      await editor.fill('');
      await editor.pressSequentially(text);
      return editor;
    };
    const run = (page: Page) => page.getByLabel('Query', { exact: true }).press('Control+Enter');

    it('runs a typed query into a table of its columns, marks a syntax error where it is, and charts a count by', async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, { landing: '/query', timezoneId: 'UTC' });
      await page.getByRole('link', { name: 'Query', exact: true }).waitFor();
      await typeQuery(page, 'ci_type = k8s.deployment and namespace = shop | fields name, namespace, updated_at');
      await run(page);
      await page.waitForURL(/\/ui\/query\?q=/);
      const table = page.getByRole('table', { name: 'Query answer' });
      await table.waitFor();
      expect(await table.getByRole('columnheader').allInnerTexts()).to.deep.equal(['name', 'namespace', 'updated_at']);
      expect(await table.getByRole('link', { name: 'checkout' }).count()).to.be.at.least(1);
      expect(await table.locator('tbody tr').first().locator('td').nth(2).innerText()).to.match(/^2026-11-\d\d \d\d:/);
      await checkView(page, 'query-rows');

      // as one types: the parser's error, marked where it is, with what it expected there
      await typeQuery(page, 'ci_type = k8s.pod andd name = x');
      const mark = page.locator('.query-error-mark');
      await mark.waitFor();
      expect(await mark.innerText()).to.equal('andd');
      expect(await page.locator('.query-problem').innerText()).to.match(
        /^Line 1, column 19: expected .*"or".* but found "a"/,
      );
      expect(await page.getByLabel('Query', { exact: true }).getAttribute('aria-invalid')).to.equal('true');

      // the server's 422 for a name that does not exist, marked at the name
      await typeQuery(page, 'ci_type = k8s.pod and nmae = checkout');
      await run(page);
      await page
        .locator('.query-problem')
        .getByText(/unknown field/)
        .waitFor();
      expect(await page.locator('.query-error-mark').innerText()).to.equal('nmae');

      await typeQuery(page, 'ci_type = k8s.pod | count by namespace');
      await run(page);
      const chart = page.getByRole('list', { name: 'count by namespace' });
      await chart.waitFor();
      const groups = await chart.locator('li').allInnerTexts();
      expect(
        groups.some((text) => /^shop\s+\d+$/.test(text.replace(/\n/g, ' ').trim())),
        groups.join('|'),
      ).to.equal(true);
      await checkView(page, 'query-count-by');
      await context.close();
    });

    it('completes fields from the data, CI types and relationship types, the arrows moving and Enter picking', async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, { landing: '/query' });
      const editor = await typeQuery(page, 'ci_type = k8s.dep');
      const list = page.getByRole('listbox', { name: 'Completions' });
      await list.getByRole('option', { name: /^k8s\.deployment/ }).waitFor();
      await editor.press('Enter');
      expect(await editor.inputValue()).to.equal('ci_type = k8s.deployment ');
      await editor.pressSequentially('and raw_data.sp');
      await list
        .getByRole('option', { name: /^raw_data\.spec\b/ })
        .first()
        .waitFor();
      expect(await editor.getAttribute('aria-activedescendant')).to.match(/-0$/);
      await editor.press('Escape');
      expect(await list.count()).to.equal(0);
      await editor.pressSequentially('ec.replicas >= 1 -[');
      await list.getByRole('option', { name: /^manages/ }).waitFor();
      await checkView(page, 'query-completion');
      await context.close();
    });

    it('draws a query that hops as a graph, explains its plan, and saves it as a view', async () => {
      const query =
        'ci_type = k8s.deployment and name = checkout -[manages]-> ci_type = k8s.replicaset -[manages]-> ci_type = k8s.pod';
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/query?${new URLSearchParams({ q: query })}`,
        colorScheme: 'dark',
      });
      await page.getByRole('table', { name: 'Query answer' }).waitFor();
      await page.getByRole('tab', { name: 'Graph' }).click();
      const drawing = page.getByRole('img', { name: /^Drawing of \d+ items and \d+ relationships/ });
      await drawing.waitFor();
      const [, items, relationships] = /Drawing of (\d+) items and (\d+) relationships/.exec(
        (await drawing.getAttribute('aria-label'))!,
      )!;
      expect(Number(items)).to.be.at.least(3);
      expect(Number(relationships)).to.be.at.least(2);
      await page.getByRole('list', { name: 'After hop 2' }).waitFor();

      await page.locator('.query-plan summary').click();
      const steps = page.getByRole('list', { name: 'Plan steps' });
      await steps.waitFor();
      expect(await steps.getByText('index', { exact: true }).count()).to.be.at.least(1);
      expect(await page.locator('.query-plan .badge').first().innerText()).to.match(/^(light|moderate|heavy)$/);
      await checkView(page, 'query-graph-dark');

      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download CSV' }).click(),
      ]);
      const csv = readFileSync((await download.path())!, 'utf8').split(/\r?\n/);
      expect(csv[0]!.split(',')).to.include.members(['ci_id', 'name', 'ci_type', 'namespace', 'status', 'updated_at']);
      expect(csv.filter((line) => line.includes('k8s.pod')).length).to.be.at.least(1);

      await page.getByText(/^Saved views/).click();
      await page.getByLabel('View name').fill('checkout pods');
      await page.getByRole('button', { name: 'Save this view' }).click();
      const saved = page.getByRole('list', { name: 'Saved views' }).getByRole('link', { name: 'checkout pods' });
      await saved.waitFor();
      expect(decodeURIComponent((await saved.getAttribute('href'))!)).to.include(`q=${query}`.replace(/ /g, '+'));
      await context.close();
    });

    it('fits a phone at 390 px with no violations, and every query is a URL', async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/query?${new URLSearchParams({ q: 'ci_type = k8s.pod | count by namespace, status' })}`,
        viewport: { width: 390, height: 844 },
      });
      await page.getByRole('list', { name: 'count by namespace, status' }).waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth')).to.be.at.most(390);
      await checkView(page, 'query-phone');
      await context.close();
    });
  },
);
