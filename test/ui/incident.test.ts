import { expect } from 'chai';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import type { Sql } from '../../src/platform/db/database.js';
import { loadDemo } from '../../src/collection/demo/service.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../support/app.js';
import { ARTIFACTS, hasChromium, launchChromium, prepareWebInterface, signedIn } from '../support/browser.js';
import { resetDatabase, testDatabase } from '../support/db.js';
import { describeWith } from '../support/dependencies.js';

// the demo's week ends at 15:00 on the 20th; its incident was the afternoon before
const NOW = new Date('2026-11-20T15:27:00Z');
const INCIDENT = 'from=2026-11-19T13:30:00Z&to=2026-11-19T14:30:00Z';

describeWith(hasChromium)(
  "the demo's incident walked from checkout's deployment in a real Chromium, at 1400 px and at 390 px (skipped outside CI when /usr/bin/chromium is missing; under CI=true a missing one fails)",
  function () {
    this.timeout(300_000);
    let sql: Sql;
    let app: TestApp;
    let browser: Browser;
    let admin: string;
    let deployment: string;

    before(async () => {
      await prepareWebInterface();
      sql = (await testDatabase()).sql;
      await resetDatabase(sql);
      await loadDemo(sql, { tenantId: DEFAULT_TENANT_ID, now: NOW, batchSize: 1000, progress: () => undefined });
      app = await startTestApp();
      admin = await createKey(sql, 'adm');
      const [row] = await sql<{ ci_id: string }[]>`
        select ci_id from configuration_items where ci_type = 'k8s.deployment' and namespace = 'shop' and name = 'checkout' and scope_id = 'east'`;
      deployment = row!.ci_id;
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await app?.close();
    });

    it("reads the incident on checkout's deployment as three lines by severity, each opening into its exact records", async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/ci/${deployment}?${INCIDENT}`,
        timezoneId: 'UTC',
      });
      const timeline = page.getByRole('list', { name: 'Change timeline, newest first' });
      await timeline.waitFor();
      const lines = timeline.locator('details.line');
      const summaries = (await lines.locator('summary').allInnerTexts()).reverse();
      expect(summaries, summaries.join('\n')).to.have.length(3);
      expect(
        summaries.map((text) => /^(High|Medium|Low|Info)\s+(\S+)\s+2026-11-19 (\d\d:\d\d)/.exec(text)?.slice(1)),
      ).to.deep.equal([
        ['High', 'config', '13:40'],
        ['High', 'restart', '13:52'],
        ['High', 'config', '14:20'],
      ]);
      // every line is coloured by its severity
      expect(await timeline.locator('details.line.severity-high').count()).to.equal(3);
      // the crash loop folds two collections of the pods' restarts, and opens into its records
      const crash = lines.filter({ hasText: 'restart' });
      expect(await crash.locator('summary').innerText()).to.match(
        /^High\s+restart[\s\S]*\s\d+ k8s\.pod: raw_data\.status\.containerStatuses ×2 \(with /,
      );
      const [, count] = /· (\d+) records/.exec(await crash.locator('summary').innerText())!;
      await crash.locator('summary').click();
      const records = crash.getByRole('list', { name: /^The records of:/ });
      await records.waitFor();
      expect(await records.locator(':scope > li').count()).to.equal(Number(count));
      // the changes around it read the same way: the deployment's lines beside the config map it mounts
      const around = page.getByRole('list', { name: 'Changes around this item' });
      await around.waitFor();
      const aroundText = (await around.locator('details.line > summary').allInnerTexts()).join('\n');
      expect(aroundText).to.match(/config\s+2026-11-19 13:40/);
      expect(aroundText).to.match(/restart\s+2026-11-19 13:52/);
      await page.screenshot({ path: path.join(ARTIFACTS, 'incident.png'), fullPage: true });
      await context.close();
    });

    it('shows the exact records around it on request, repeats on sibling pods grouped into bursts', async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/ci/${deployment}?${INCIDENT}`,
        timezoneId: 'UTC',
      });
      await page.getByRole('group', { name: 'Reading of the changes around here' }).getByLabel('Exact records').check();
      const around = page.getByRole('list', { name: 'Changes around this item' });
      await around.locator(':scope > li > details.burst').first().waitFor();
      // the configuration change is a record of its own, on the deployment
      expect(
        await around.locator(':scope > li').filter({ hasText: 'raw_data.spec.template' }).first().isVisible(),
      ).to.equal(true);
      const summaries = await around.locator(':scope > li > details.burst > summary').allInnerTexts();
      expect(
        summaries.some((text) => /\d+ k8s\.pod archived/.test(text)),
        summaries.join('\n'),
      ).to.equal(true);
      expect(
        summaries.some((text) => /raw_data\.status\.containerStatuses.* changed on \d+ k8s\.pod/.test(text)),
        summaries.join('\n'),
      ).to.equal(true);
      // a burst opens into its members, each a change record of a pod
      const archived = around.locator(':scope > li > details.burst').filter({ hasText: 'k8s.pod archived' }).first();
      const [, members] = /(\d+) k8s\.pod archived/.exec(await archived.locator('summary').innerText())!;
      await archived.locator('summary').click();
      expect(await archived.locator('ul.changes > li').count()).to.equal(Number(members));
      await context.close();
    });

    it("lists the archived pods of checkout's replica sets once inactive and archived ones are asked for", async () => {
      const [replicaSet] = await sql<{ ci_id: string }[]>`
        select c.ci_id from configuration_items c
        join relationship_history h on h.from_ci_id = c.ci_id and h.relationship_type = 'manages'
        join configuration_items pod on pod.ci_id = h.to_ci_id and pod.status = 'archived'
        where c.ci_type = 'k8s.replicaset' and c.namespace = 'shop' and c.name like 'checkout-%' and c.scope_id = 'east'
        limit 1`;
      const { context, page } = await signedIn(browser, app.baseUrl, admin, { landing: `/ci/${replicaSet!.ci_id}` });
      const section = page.getByRole('region', { name: /^Relationships/ });
      await section.getByText('No relationships.').or(section.locator('details').first()).waitFor();
      const before = await section.locator('ul.neighbours li').count();
      await section.getByLabel('Inactive and archived too').check();
      await section
        .getByText(/· archived · ended /)
        .first()
        .waitFor();
      expect(await section.locator('ul.neighbours li').count()).to.be.above(before);
      await context.close();
    });

    it('compares before and after the incident: the crashed pods left the active inventory, and over every status they changed status', async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/compare?${INCIDENT}&ci_type=k8s.pod`,
      });
      const byType = page.getByRole('table', { name: 'By type' });
      await byType.waitFor();
      expect(await byType.getByRole('columnheader').allInnerTexts()).to.deep.equal([
        'Type',
        'Entered',
        'Left',
        'Changed',
      ]);
      const pods = byType.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'k8s.pod' }) });
      const [entered, left] = (await pods.getByRole('cell').allInnerTexts()).map(Number);
      expect(left, 'pods that left').to.be.at.least(3);
      expect(entered, 'pods that entered').to.be.at.least(3);
      const differing = page.getByRole('table', { name: 'Configuration items that differ' });
      await differing.getByText('left', { exact: true }).first().waitFor();

      await page.getByLabel('Every status (archiving is a change of status)').check();
      await page.waitForURL(/status=all/);
      await byType.getByRole('columnheader', { name: 'Disappeared' }).waitFor();
      const [, gone, changed] = (
        await byType
          .getByRole('row')
          .filter({ has: page.getByRole('rowheader', { name: 'k8s.pod' }) })
          .getByRole('cell')
          .allInnerTexts()
      ).map(Number);
      // archived, not removed: over every status they are still there, with another status
      expect(gone).to.equal(0);
      expect(changed).to.be.at.least(left!);
      await context.close();
    });

    it("labels the statistics' time axis at round steps, and a logarithmic scale keeps the week readable beside the first load", async () => {
      const week = 'from=2026-11-13T15:00:00Z&to=2026-11-20T15:00:00Z';
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/stats?${week}`,
        timezoneId: 'UTC',
      });
      const chart = page.getByRole('group', { name: /^Changes per bucket/ });
      await chart.waitFor();
      expect(await chart.locator('g.tick.time text').allTextContents()).to.deep.equal([
        '11-14',
        '11-15',
        '11-16',
        '11-17',
        '11-18',
        '11-19',
        '11-20',
      ]);
      const heights = async () =>
        await chart.locator('rect.bar').evaluateAll((bars) => bars.map((bar) => Number(bar.getAttribute('height'))));
      const linear = await heights();
      await page.getByLabel('Logarithmic').check();
      await page.waitForURL(/scale=log/);
      await page.getByRole('group', { name: /logarithmic scale/ }).waitFor();
      const log = await heights();
      // the first day's load stays the tallest, while the quiet days' bars grow from slivers to readable marks
      const minimal = (values: number[]) => values.filter((value) => value <= 4).length;
      expect(minimal(log)).to.be.below(minimal(linear));
      expect(Math.max(...log)).to.be.at.most(240);
      const tip = await chart.locator('rect.bar title').first().textContent();
      expect(tip).to.match(/^2026-11-1\d \d\d:00:00: [\d,]+ created, [\d,]+ updated, [\d,]+ archived/);
      await context.close();
    });

    it('names the time zone in the header and shows every time in UTC when asked', async () => {
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/ci/${deployment}?${INCIDENT}`,
        timezoneId: 'America/New_York',
      });
      const zone = page.getByRole('button', { name: /^Times: / });
      expect(await zone.innerText()).to.match(/^Times: America\/New_York \(UTC−05:00\)$/);
      const around = page.getByRole('list', { name: 'Changes around this item' });
      await around.waitFor();
      const first = () => around.locator('time').first().innerText();
      // 14:20 UTC is 09:20 in New York
      expect(await first()).to.match(/^2026-11-19 09:/);
      await zone.click();
      expect(await zone.innerText()).to.equal('Times: UTC');
      await around.waitFor();
      expect(await first()).to.match(/^2026-11-19 14:/);
      // the window's inputs speak the same zone, as ISO reads
      expect(await page.getByLabel('From').inputValue()).to.equal('2026-11-19 13:30');
      await context.close();
    });

    it('fits a phone: the header wraps inside the page, nothing widens it, sign out stays reachable', async () => {
      for (const [landing, colorScheme] of [
        ['/inventory', 'light'],
        [`/ci/${deployment}?${INCIDENT}`, 'dark'],
        ['/changes?q=PAYMENT_TIMEOUT_MS', 'light'],
        ['/changes?q=PAYMENT_TIMEOUT_MS', 'dark'],
      ] as const) {
        const { context, page } = await signedIn(browser, app.baseUrl, admin, {
          landing,
          colorScheme,
          viewport: { width: 390, height: 844 },
        });
        await page.locator('main h1, main table, main [role="list"]').first().waitFor();
        const width = await page.evaluate('document.documentElement.scrollWidth');
        expect(width, landing).to.be.at.most(390);
        const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
        expect(signOut!.x + signOut!.width, landing).to.be.at.most(390);
        // the header's buttons read on its dark background in either scheme
        const colours = (await page.evaluate(`(() => {
          const button = [...document.querySelectorAll('header.top button')].find((b) => b.textContent.trim() === 'Sign out');
          return [getComputedStyle(button).color, getComputedStyle(button.closest('header')).backgroundColor];
        })()`)) as [string, string];
        expect(colours[0], landing).to.equal('rgb(255, 255, 255)');
        expect(colours[1], landing).to.not.equal('rgb(255, 255, 255)');
        await page.screenshot({
          path: path.join(ARTIFACTS, `narrow-${landing.split(/[/?]/)[1]}-${colorScheme}.png`),
          fullPage: true,
        });
        await context.close();
      }
    });
  },
);
