import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { CollectionWorker } from '../../src/collection/collectors/runs/worker.js';
import { catchUpQuality } from '../../src/inventory/quality/service.js';
import { SubscriptionDelivery } from '../../src/history/subscriptions/delivery.js';
import { createKey, startTestApp, type TestApp } from '../support/app.js';
import {
  ARTIFACTS,
  hasChromium,
  launchChromium,
  prepareWebInterface,
  signedIn as signedInWith,
} from '../support/browser.js';
import { resetDatabase, testDatabase } from '../support/db.js';
import { describeWith } from '../support/dependencies.js';
import { FakeKubeApiServer } from '../support/fake-kube-apiserver.js';
import { populateCluster } from '../support/kube-fixtures.js';

const TOKEN = 'kube-token-for-the-web-interface';
const axeSource = () => readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

describeWith(hasChromium)(
  'the web interface in a real Chromium against a real cinv with two collected clusters (skipped outside CI when /usr/bin/chromium is missing; under CI=true a missing one fails)',
  function () {
    this.timeout(120_000);
    let app: TestApp;
    let fake: FakeKubeApiServer;
    let browser: Browser;
    let admin: string;
    let scoped: string;
    /** A moment between the two collections: the deployment had one container and two replicas then. */
    let between: string;
    const sources: { id: number; collector_id: number; name: string }[] = [];

    const collect = async () => {
      const worker = new CollectionWorker(app.context, { concurrency: 2, leaseMs: 10_000, pollMs: 60_000 });
      await worker.tick();
      await worker.idle();
      await worker.stop();
    };
    const trigger = async (source: { id: number; collector_id: number }) => {
      const reply = await app.request(
        'POST',
        `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`,
        { key: admin },
      );
      expect(reply.status, reply.text).to.equal(202);
    };

    before(async () => {
      await prepareWebInterface();
      await resetDatabase((await testDatabase()).sql);
      app = await startTestApp();
      admin = await createKey(app.sql, 'adm');
      fake = new FakeKubeApiServer(TOKEN);
      await fake.start();
      populateCluster(fake, 150);
      fake.put('deployments', {
        metadata: { name: 'web', namespace: 'shop' },
        spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image: 'shop/web:1.0' }] } } },
        status: { readyReplicas: 2 },
      });
      fake.put('namespaces', { metadata: { name: 'shop' }, status: { phase: 'Active' } });
      for (const cluster of ['east', 'west']) {
        const added = await app.request('POST', '/api/v1/sources', {
          key: admin,
          body: {
            name: cluster,
            collector_type: 'kubernetes',
            endpoint: fake.url,
            config: { cluster_name: cluster, verify_ssl: false },
            schedule_config: { enabled: false, interval_minutes: 60 },
          },
        });
        expect(added.status, added.text).to.equal(201);
        sources.push({ ...(added.body as { id: number; collector_id: number }), name: cluster });
        const stored = await app.request('PUT', `/api/v1/sources/${(added.body as { id: number }).id}/credentials`, {
          key: admin,
          body: { type: 'token', token: TOKEN },
        });
        expect(stored.status, stored.text).to.equal(204);
      }
      for (const source of sources) await trigger(source);
      await collect();
      // the app's clock stands still unless moved: the second collection comes a minute later
      between = new Date(app.clock.now.getTime() + 30_000).toISOString();
      app.clock.now = new Date(app.clock.now.getTime() + 60_000);
      // a second container in the deployment: an array change in its history
      fake.put('deployments', {
        metadata: { name: 'web', namespace: 'shop' },
        spec: {
          replicas: 3,
          template: {
            spec: {
              containers: [
                { name: 'app', image: 'shop/web:1.0' },
                { name: 'sidecar', image: 'envoy:1.30' },
              ],
            },
          },
        },
        status: { readyReplicas: 3 },
      });
      for (const source of sources) await trigger(source);
      await collect();
      await app.request('POST', '/api/v1/changes/refresh-stats', { key: admin });
      scoped = await createKey(app.sql, 'svc', {
        permissions: [
          'configuration_items:read',
          'changes:read',
          'relationships:read',
          'sources:read',
          'collectors:read',
        ],
        scopes: [{ sourceId: String(sources[0]!.id), scopeId: 'east' }],
      });
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await fake?.stop();
      await app?.close();
    });

    const url = (relative: string) => `${app.baseUrl}/ui${relative}`;

    /** A fresh browser signed in with a key through the sign-in form, landing where it was going. */
    async function signedIn(
      key: string,
      landing = '/inventory',
      colorScheme: 'light' | 'dark' = 'light',
    ): Promise<{ context: BrowserContext; page: Page }> {
      return signedInWith(browser, app.baseUrl, key, { landing, colorScheme });
    }

    /** No serious or critical axe-core violations on the page as it is, and a screenshot of it. */
    async function checkView(page: Page, name: string): Promise<void> {
      await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
      // evaluated through the debugging protocol: the page's own policy allows no inline script
      await page.evaluate(axeSource());
      // page functions are written as text: this project's types describe Node, not the browser
      const violations = (await page.evaluate('axe.run().then((result) => result.violations)')) as AxeViolation[];
      const serious = violations.filter(
        (violation) => violation.impact === 'serious' || violation.impact === 'critical',
      );
      expect(
        serious.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join('; ')})`),
        name,
      ).to.deep.equal([]);
    }

    /** The page's data has arrived for its URL: nothing is loading any more. */
    const settled = async (page: Page) => {
      await page.locator('[aria-busy="true"], [role="status"].loading').first().waitFor({ state: 'detached' });
    };
    /** The first page of an inventory difference whose query `matches`, once the browser has it. */
    const differencesAnswered = (page: Page, matches: (query: URLSearchParams) => boolean) =>
      page.waitForResponse((response) => {
        const asked = new URL(response.url());
        return (
          asked.pathname === '/api/v1/inventory/diff' &&
          !asked.searchParams.has('cursor') &&
          matches(asked.searchParams)
        );
      });
    const rowNames = async (page: Page) =>
      page.locator('table[aria-label="Configuration items"] tbody tr td:first-child').allInnerTexts();

    it('draws /docs and /redoc with nothing loaded from another origin and nothing refused by their policy', async () => {
      const context = await browser.newContext();
      try {
        for (const [docs, heading] of [
          ['/docs', 'List configuration items'],
          ['/redoc', 'List configuration items'],
        ] as const) {
          const page = await context.newPage();
          const foreign: string[] = [];
          const refused: string[] = [];
          page.on('request', (request) => {
            const target = new URL(request.url());
            if (!['data:', 'blob:'].includes(target.protocol) && target.origin !== app.baseUrl)
              foreign.push(request.url());
          });
          page.on('console', (message) => {
            if (message.type() === 'error' && /Content Security Policy/i.test(message.text()))
              refused.push(message.text());
          });
          await page.goto(`${app.baseUrl}${docs}`);
          await page.getByText(heading).first().waitFor({ state: 'attached' });
          await page.screenshot({ path: path.join(ARTIFACTS, `api-${docs.slice(1)}.png`) });
          expect(foreign, docs).to.deep.equal([]);
          expect(refused, docs).to.deep.equal([]);
          await page.close();
        }
      } finally {
        await context.close();
      }
    });

    it('signs in with a key into a session cookie (never stored in the page), and a 401 returns to sign-in and back', async () => {
      const { context, page } = await signedIn(admin, '/inventory?status=all');
      const cookies = await context.cookies();
      expect(cookies.map((c) => c.name)).to.include('cinv_session');
      expect(cookies.find((c) => c.name === 'cinv_session')!.httpOnly).to.equal(true);
      const stored = (await page.evaluate(
        'JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie',
      )) as string;
      expect(stored).to.not.include(admin.slice(-12));
      await page.getByRole('table', { name: 'Configuration items' }).waitFor();
      await checkView(page, 'inventory');
      // the session ends on the server: the next call answers 401 and the page asks to sign in again
      await app.sql`delete from sessions`;
      await page.getByRole('tab', { name: 'Archived' }).click();
      await page.waitForURL(/\/ui\/sign-in\?return_to=%2Fui%2Finventory%3Fstatus%3Darchived/);
      await page.getByLabel('API key or token').fill('adm_not-a-real-key');
      await page.getByRole('button', { name: 'Sign in' }).click();
      // the envelope's message, status, code and error id
      await page.getByRole('alert').filter({ hasText: '401 HTTP_401' }).waitFor();
      expect(await page.getByRole('alert').innerText()).to.match(/error id [0-9a-f-]{36}/);
      // and how to get a key that works
      expect(await page.getByRole('note', { name: 'How to get a key' }).innerText()).to.include(
        'npm run cinv -- keys create --tier adm',
      );
      await checkView(page, 'sign-in');
      await page.getByLabel('API key or token').fill(admin);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((target) => target.pathname + target.search === '/ui/inventory?status=archived');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/ui\/sign-in/);
      expect(await (await page.request.get(`${app.baseUrl}/api/v1/me`)).status()).to.equal(401);
      await context.close();
    });

    it('filters the inventory by a raw_data path with the filter builder, adds a column and sorts by name; the view is its URL', async () => {
      const { context, page } = await signedIn(admin);
      await page.getByLabel('Field').selectOption('raw_data');
      await page.getByLabel('Path').fill('spec.nodeName');
      // the API matches `like` as "contains", % and _ included as plain characters: the label says so
      expect(await page.getByLabel('Operator').locator('option[value="like"]').innerText()).to.equal(
        'contains (same case)',
      );
      await page.getByLabel('Operator').selectOption('eq');
      await page.getByLabel('Value').fill('node-1');
      await page.getByRole('button', { name: 'Add filter' }).click();
      await page.waitForURL(/filter=raw_data\.spec\.nodeName%3Aeq%3Anode-1/);
      await page.getByLabel('Add a column from raw_data').fill('spec.nodeName');
      await page.getByRole('button', { name: 'Add column' }).click();
      await page.waitForURL(/cols=spec\.nodeName/);
      await page.getByRole('columnheader', { name: 'spec.nodeName' }).waitFor();
      // the header is drawn as soon as the column is added; its values come with the next page
      const cells = page.locator('table[aria-label="Configuration items"] tbody tr td.value');
      await cells.filter({ hasText: 'node-1' }).first().waitFor();
      const nodes = await cells.allInnerTexts();
      expect(nodes.length).to.be.greaterThan(0);
      expect(new Set(nodes)).to.deep.equal(new Set(['node-1']));
      const expected = await app.get(
        '/api/v1/configuration-items?filter=raw_data.spec.nodeName:eq:node-1&limit=1',
        admin,
      );
      await page.getByText(new RegExp(`of ${(expected.body.total as number).toLocaleString('en')}$`)).waitFor();

      // the CSV holds the whole view, with the added column
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download CSV' }).click(),
      ]);
      const csv = readFileSync((await download.path())!, 'utf8')
        .trimEnd()
        .split('\r\n');
      // the columns the table shows, Source and Instance among them, then the added one
      expect(csv[0]).to.equal(
        'ci_id,name,namespace,ci_type,status,source_id,source,instance,last_seen,created_at,updated_at,spec.nodeName',
      );
      expect(csv).to.have.length((expected.body.total as number) + 1);
      expect(new Set(csv.slice(1).map((line) => line.split(',').at(-1)))).to.deep.equal(new Set(['node-1']));
      const shown = await page
        .locator('table[aria-label="Configuration items"] tbody tr')
        .first()
        .locator('td')
        .nth(4)
        .innerText();
      const [, , , , , , source, instance] = csv[1]!.split(',');
      expect(shown.split('\n')).to.deep.equal([source, instance]);

      await page.getByRole('link', { name: 'Name', exact: true }).click();
      await page.waitForURL(/sort_by=name&sort_order=desc/);
      await settled(page);
      const descending = await rowNames(page);
      expect(descending).to.deep.equal([...descending].sort().reverse());
      await page.getByRole('link', { name: 'Name', exact: true }).click();
      await page.waitForURL(/sort_order=asc/);
      await settled(page);
      const ascending = await rowNames(page);
      expect(ascending).to.deep.equal([...ascending].sort());
      // back walks the view's history
      await page.goBack();
      await page.waitForURL(/sort_order=desc/);
      await settled(page);
      await context.close();
    });

    it('searches names, narrows to a source, and shows where each CI comes from and when, one way for every time', async () => {
      const { context, page } = await signedIn(admin, '/inventory');
      await page.getByRole('table', { name: 'Configuration items' }).waitFor();
      await page.getByLabel('Search names, namespaces and types').fill('WEB');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForURL(/[?&]q=WEB/);
      await settled(page);
      const found = await rowNames(page);
      expect(found.length).to.be.greaterThan(0);
      expect(found.every((name) => name.toLowerCase().includes('web'))).to.equal(true);
      await page.getByLabel('Source').selectOption({ label: 'west' });
      await page.waitForURL(new RegExp(`source_id=${sources[1]!.id}`));
      await settled(page);
      const cells = await page
        .locator('table[aria-label="Configuration items"] tbody tr td:nth-child(5)')
        .allInnerTexts();
      expect(cells.length).to.be.greaterThan(0);
      expect(cells.every((cell) => cell.startsWith('west'))).to.equal(true);
      const times = page.locator('table[aria-label="Configuration items"] tbody tr').first().locator('time');
      expect(await times.count(), 'last seen, updated and created').to.equal(3);
      for (const time of await times.all()) {
        expect(await time.innerText()).to.match(/ago$|^just now$|^in /);
        expect(await time.getAttribute('title')).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
      }
      await checkView(page, 'inventory-search');
      await context.close();
    });

    it('pages forward by cursor and back by offset, the row numbers kept', async () => {
      const { context, page } = await signedIn(admin, '/inventory?sort_by=name&sort_order=asc&limit=2');
      await page.getByRole('table', { name: 'Configuration items' }).waitFor();
      await settled(page);
      const first = await rowNames(page);
      await page.getByRole('button', { name: 'Next →' }).click();
      await page.waitForURL(/[?&]cursor=/);
      await settled(page);
      expect(new URL(page.url()).searchParams.get('offset')).to.equal('2');
      await page.getByText(/^3–4 of /).waitFor();
      const second = await rowNames(page);
      expect(second).to.have.lengthOf(2);
      const byOffset = await app.request('GET', '/api/v1/configuration-items?sort_by=name&sort_order=asc&limit=4', {
        key: admin,
      });
      expect([...first, ...second]).to.deep.equal((byOffset.body.items as { name: string }[]).map((ci) => ci.name));
      await page.getByRole('button', { name: 'Next →' }).click();
      await page.waitForURL(/[?&]offset=4/);
      await settled(page);
      await page.getByRole('button', { name: '← Previous' }).click();
      await page.waitForURL(
        (target) => target.searchParams.get('offset') === '2' && !target.searchParams.has('cursor'),
      );
      await settled(page);
      expect(await rowNames(page)).to.deep.equal(second);
      await context.close();
    });

    it('opens a CI and expands a change into a structural diff of its containers array, inline and side by side', async () => {
      const { context, page } = await signedIn(
        admin,
        '/inventory?filter=name%3Aeq%3Aweb&filter=ci_type%3Aeq%3Ak8s.deployment',
      );
      await page.getByRole('link', { name: 'web', exact: true }).first().click();
      await page.waitForURL(/\/ui\/ci\/[0-9a-f-]{36}$/);
      await page.getByRole('heading', { name: 'web', level: 1 }).waitFor();
      // the exact records, each with its diff (the readable lines are the incident walk's)
      await page.getByRole('group', { name: 'Reading of the change timeline' }).getByLabel('Exact records').check();
      await page.getByRole('list', { name: 'Change timeline, newest first' }).waitFor();
      const updated = page.getByRole('button', { name: /Show the diff of UPDATED/ }).first();
      await updated.click();
      const containers = page.getByRole('group', { name: 'Changes of raw_data.spec.template.spec.containers' });
      await containers.waitFor();
      // the new element shows as added, the unchanged one stays unchanged: not two strings compared
      const added = await containers.locator('.diff-added').allInnerTexts();
      expect(added.join('\n')).to.include('sidecar');
      expect(added.join('\n')).to.not.include('"name":"app"');
      expect(await containers.locator('.diff-same').allInnerTexts()).to.satisfy((rows: string[]) =>
        rows.some((row) => row.includes('shop/web:1.0')),
      );
      await checkView(page, 'ci-detail');
      // each diff-layout picker of the page (the timeline's, the changes around it) is a group of its own: each shows its choice
      const pickers = page.getByRole('group', { name: 'Diff layout' });
      expect(await pickers.count()).to.be.at.least(2);
      for (const picker of await pickers.all())
        expect(await picker.getByRole('radio', { name: 'Inline' }).isChecked()).to.equal(true);
      await page.getByRole('radio', { name: 'Side by side' }).first().check();
      const split = page.getByRole('table', {
        name: 'Changes of raw_data.spec.template.spec.containers, old and new side by side',
      });
      // the timeline is a virtual list that draws its rows again as further pages arrive: a change
      // opened before that is drawn closed, as a person scrolling back would find it; open it again
      await split.waitFor({ timeout: 5_000 }).catch(async () => {
        const disclose = page.getByRole('button', { name: /Show the diff of UPDATED/ }).first();
        if ((await disclose.getAttribute('aria-expanded')) === 'false') await disclose.click();
      });
      await split.waitFor();
      expect(await split.locator('tr.diff-added td:last-child').allInnerTexts()).to.satisfy((cells: string[]) =>
        cells.some((cell) => cell.includes('sidecar')),
      );
      // a new CI's fields show as added, with no removed null before them
      await page.getByRole('radio', { name: 'Inline' }).first().check();
      const creation = page.getByRole('button', { name: /Show the diff of CREATED/ }).first();
      await creation.click();
      const created = page.locator('.change-created .diffs').first();
      await created.waitFor();
      expect(await created.locator('.diff-removed').count()).to.equal(0);
      expect(await created.locator('.diff-added').count()).to.be.at.least(1);
      await page.getByRole('heading', { name: /Relationships/ }).waitFor();
      // the deployment belongs to its namespace: one step upstream in the graph around it
      await page.getByRole('list', { name: '1 step away' }).getByRole('link', { name: 'shop' }).first().waitFor();
      await context.close();
    });

    it('draws what depends on a node to a depth, lists the same items beside it, re-centres on one, and shows the changes around it', async () => {
      const { context, page } = await signedIn(
        admin,
        '/inventory?filter=name%3Aeq%3Anode-0&filter=ci_type%3Aeq%3Ak8s.node',
      );
      await page.getByRole('link', { name: 'node-0', exact: true }).first().click();
      await page.waitForURL(/\/ui\/ci\/[0-9a-f-]{36}$/);
      const around = page.getByRole('region', { name: 'Around this item' });
      await around.getByRole('radio', { name: 'What depends on it' }).check();
      // two steps down: the pods on the node, then the services routing to them
      const near = around.getByRole('list', { name: '1 step away' });
      await around.getByText(/^2 steps away/).waitFor();
      const pods = (await near.getByRole('link').allInnerTexts()).filter((name) => /^app-\d+-rs-\d$/.test(name));
      expect(pods.length).to.equal(50);
      await around.locator('canvas').first().waitFor();
      await around.getByLabel('Depth').selectOption('1');
      await around.getByText(/^2 steps away/).waitFor({ state: 'detached' });
      const changes = page.getByRole('list', { name: 'Changes around this item' });
      await changes.waitFor();
      expect(await changes.getByRole('listitem').count()).to.be.greaterThan(0);
      await settled(page);
      await checkView(page, 'ci-graph');
      // a CI of the list becomes the centre
      await near.getByRole('link', { name: pods[0]! }).click();
      await page.waitForURL(/\/ui\/ci\/[0-9a-f-]{36}$/);
      await page.getByRole('heading', { name: pods[0]!, level: 1 }).waitFor();
      await context.close();
    });

    it('shows the inventory and a CI as they were at a moment, says so plainly, and leads back to now', async () => {
      const filters = 'filter=name%3Aeq%3Aweb&filter=ci_type%3Aeq%3Ak8s.deployment';
      const { context, page } = await signedIn(admin, `/inventory?as_of=${encodeURIComponent(between)}&${filters}`);
      await page.getByRole('note').filter({ hasText: 'Showing the inventory as it was stored at' }).waitFor();
      await settled(page);
      expect(await rowNames(page)).to.deep.equal(['web', 'web']);
      // the past has no last_seen: its header does not sort, its cells say nothing
      expect(await page.getByRole('link', { name: 'Last seen' }).count()).to.equal(0);
      await page.getByRole('link', { name: 'web', exact: true }).first().click();
      await page.waitForURL(/\/ui\/ci\/[0-9a-f-]{36}\?as_of=/);
      await page.getByRole('note').filter({ hasText: 'Showing this configuration item as it was stored at' }).waitFor();
      await page.getByRole('heading', { name: 'web', level: 1 }).waitFor();
      /** Waits for the deployment's replicas to show `count` (the tree keeps what was opened when the CI is drawn again). */
      const replicas = async (count: number) => {
        const tree = page.getByRole('list', { name: 'raw_data' });
        await tree.waitFor();
        const leaf = tree.locator('li:has(> button[aria-label="Copy path raw_data.spec.replicas"])');
        if (!(await leaf.isVisible()))
          await tree
            .locator('summary')
            .filter({ hasText: /^spec\b/ })
            .first()
            .click();
        await leaf.filter({ hasText: `replicas: ${count}` }).waitFor({ timeout: 10_000 });
      };
      await replicas(2);
      await checkView(page, 'ci-as-of');
      await page.getByRole('link', { name: 'Back to now' }).click();
      await page.waitForURL(/\/ui\/ci\/[0-9a-f-]{36}$/);
      await page.getByRole('heading', { name: 'web', level: 1 }).waitFor();
      await replicas(3);
      // any change's time from the timeline of exact records: the newest change shows the CI as it was right after it
      await page.getByRole('group', { name: 'Reading of the change timeline' }).getByLabel('Exact records').check();
      await page
        .getByRole('link', { name: /^As of then: the item right after the change of/ })
        .first()
        .click();
      await page.waitForURL(/\/ui\/ci\/[0-9a-f-]{36}\?as_of=/);
      await page.getByRole('note').filter({ hasText: 'Showing this configuration item as it was stored at' }).waitFor();
      await replicas(3);
      await context.close();
    });

    it("compares two moments: counts by type, the CIs that differ, one CI's structural diff, and a baseline named there", async () => {
      const { context, page } = await signedIn(admin, `/compare?from=${encodeURIComponent(between)}`);
      const byType = page.getByRole('table', { name: 'By type' });
      await byType.waitFor();
      const deployments = byType
        .getByRole('row')
        .filter({ has: page.getByRole('rowheader', { name: 'k8s.deployment' }) });
      expect(await deployments.getByRole('cell').allInnerTexts()).to.deep.equal(['0', '0', '2']);
      // one type at a time: the list keeps only the deployments
      const deploymentsOnly = differencesAnswered(page, (query) =>
        query.getAll('filter').includes('ci_type:eq:k8s.deployment'),
      );
      await byType.getByRole('link', { name: 'k8s.deployment' }).click();
      await page.waitForURL(/ci_type=k8s\.deployment/);
      // until the new answer is in, the table for the earlier URL may still show, then give way to a loading note
      await deploymentsOnly;
      const differing = page.getByRole('table', { name: 'Configuration items that differ' });
      await differing.getByRole('row').nth(2).waitFor();
      expect(await differing.getByRole('row').count()).to.equal(3);
      await differing.getByRole('link', { name: 'Diff of web' }).first().click();
      await page.waitForURL(/&ci=[0-9a-f-]{36}/);
      const panel = page.getByRole('region', { name: 'web between the two moments' });
      await panel.getByRole('group', { name: 'Changes of raw_data.spec.replicas' }).waitFor();
      expect(await panel.innerText()).to.include('envoy:1.30');
      await panel.getByText('Side by side').click();
      await panel.getByRole('table', { name: 'Changes of raw_data.spec.replicas, old and new side by side' }).waitFor();
      await settled(page);
      await checkView(page, 'compare');
      await page.getByLabel('Name this moment').fill('after the rollout');
      await page.getByRole('button', { name: 'Save baseline' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved baseline after the rollout' }).waitFor();
      const baselines = await app.get('/api/v1/baselines', admin);
      expect(baselines.body.items.map((b: { name: string }) => b.name)).to.include('after the rollout');
      // the baseline is a moment like any other: chosen as the later side, the difference is the same
      const toBaseline = differencesAnswered(page, (query) => query.has('to'));
      await page.getByRole('group', { name: 'To' }).getByLabel('Baseline').selectOption('after the rollout');
      await page.waitForURL(/to=after/);
      await toBaseline;
      await differing.getByRole('row').nth(2).waitFor();
      expect(await differing.getByRole('row').count()).to.equal(3);
      await context.close();
    });

    it('searches changes, highlights the match and opens the result', async () => {
      const { context, page } = await signedIn(admin, '/changes');
      await page.getByLabel('Search changes').fill('envoy');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.waitForURL(/q=envoy/);
      const results = page.getByRole('list', { name: 'Changes' });
      await results.waitFor();
      expect(await results.locator('mark').first().innerText()).to.match(/^envoy/i);
      // the deployment's change in each cluster
      expect(await results.locator(':scope > li').count()).to.equal(2);
      await checkView(page, 'change-search');
      await results.getByRole('link', { name: 'web' }).first().click();
      await page.waitForURL(/\/ui\/ci\//);
      await page.getByRole('heading', { name: 'web', level: 1 }).waitFor();
      await context.close();
    });

    it('says what is wrong with a request instead of offering to repeat it: a field error, a CI that is not there', async () => {
      const { context, page } = await signedIn(admin, '/changes?q=x');
      const alert = page.getByRole('alert').first();
      await alert.waitFor();
      expect(await alert.innerText()).to.include('must have at least 2 characters besides spaces');
      expect(await alert.getByRole('button', { name: 'Try again' }).count()).to.equal(0);
      await page.goto(url('/ci/0190a0e0-0000-7000-8000-000000000000'));
      const missing = page.getByRole('alert').first();
      await missing.waitFor();
      expect(await missing.innerText()).to.match(/does not exist, or it lies outside the data you may see/);
      expect(await missing.getByRole('button', { name: 'Try again' }).count()).to.equal(0);
      await checkView(page, 'missing-ci');
      await context.close();
    });

    it('scores the inventory’s health, opens the CIs failing a measure and a CI’s quality panel, and previews a rule before saving it', async () => {
      await catchUpQuality(app.context);
      const { context, page } = await signedIn(admin, '/quality');
      const completeness = page.getByRole('listitem').filter({ hasText: 'Completeness' });
      await completeness.waitFor();
      await settled(page);
      await checkView(page, 'quality');
      await completeness.getByRole('link').click();
      await page.getByRole('heading', { name: 'Completeness: failing CIs' }).waitFor();
      const web = page
        .getByRole('row')
        .filter({ hasText: 'k8s.deployment' })
        .filter({ has: page.getByRole('link', { name: 'web', exact: true }) })
        .first();
      await web.waitFor();
      expect(await web.innerText()).to.include('missing raw_data.spec.selector');
      await web.getByRole('link', { name: 'web', exact: true }).click();
      const panel = page.getByRole('region', { name: 'Data quality' });
      await panel.waitFor();
      expect(await panel.innerText()).to.include('raw_data.spec.selector');
      await page.goto(url('/quality/rules'));
      await page.getByRole('button', { name: 'New rule' }).click();
      await page.getByLabel('Name').fill('deployments have replicas');
      await page.getByLabel('Applies to').fill('ci_type = k8s.deployment');
      await page.getByLabel('Requires').fill('raw_data.spec.replicas >= 2');
      await page.getByRole('button', { name: 'Preview' }).click();
      const preview = page.getByRole('status').filter({ hasText: 'Applies to' });
      await preview.waitFor();
      expect(await preview.innerText()).to.match(/^Applies to \d+ CIs, \d+ pass/);
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('cell', { name: 'deployments have replicas' }).waitFor();
      await checkView(page, 'quality-rules');
      await context.close();
    });

    it('saves a view with its URL state, shares it, and another key opens it onto its own data', async () => {
      const { context, page } = await signedIn(admin, '/inventory');
      await page.goto(url('/inventory?status=all&filter=ci_type%3Aeq%3Ak8s.deployment'));
      await page.getByRole('table', { name: 'Configuration items' }).waitFor();
      await page.getByText('Saved views').click();
      await page.getByLabel('View name').fill('All deployments');
      await page.getByLabel('Share with everyone').check();
      await page.getByRole('button', { name: 'Save this view' }).click();
      const saved = page.getByRole('list', { name: 'Saved views' }).getByRole('link', { name: 'All deployments' });
      await saved.waitFor();
      expect(await saved.getAttribute('href')).to.equal(
        '/ui/inventory?status=all&filter=ci_type%3Aeq%3Ak8s.deployment',
      );
      await checkView(page, 'saved-views');
      await context.close();

      const other = await signedIn(scoped, '/inventory');
      await other.page.getByText('Saved views (1)').click();
      await other.page.getByRole('link', { name: 'All deployments' }).click();
      await other.page.waitForURL(/\/ui\/inventory\?status=all&filter=ci_type%3Aeq%3Ak8s\.deployment$/);
      await settled(other.page);
      const mine = await app.get('/api/v1/configuration-items?status=all&filter=ci_type:eq:k8s.deployment', scoped);
      await other.page.getByText(new RegExp(`of ${(mine.body.total as number).toLocaleString('en')}$`)).waitFor();
      expect(
        await other.page.getByRole('button', { name: 'Delete All deployments' }).count(),
        'only its owner deletes it',
      ).to.equal(0);
      await other.context.close();
    });

    it('answers the keyboard: ? lists the shortcuts, g and a letter go to a view, / goes to its search box, which keeps keys typed the moment it appears', async () => {
      const { context, page } = await signedIn(admin, '/inventory');
      await page.getByRole('table', { name: 'Configuration items' }).waitFor();
      await page.keyboard.press('?');
      const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
      await help.waitFor();
      expect(await help.innerText()).to.include('Go to change search');
      await checkView(page, 'shortcuts');
      await page.keyboard.press('Escape');
      await help.waitFor({ state: 'detached' });
      // the page's clock moves a millisecond at a time and stops the moment the box appears: what the
      // page leaves for the next frame or a timer runs only after the keys are in, as for a fast
      // typist on a busy machine
      await page.clock.install();
      await page.clock.pauseAt(Date.now() + 60_000);
      await page.keyboard.press('g');
      await page.keyboard.press('c');
      await page.waitForURL(/\/ui\/changes$/);
      const box = page.getByLabel('Search changes');
      for (let ms = 0; !(await box.isVisible()); ms += 1) {
        expect(ms, 'page milliseconds until the change search appears').to.be.below(10_000);
        await page.clock.runFor(1);
      }
      await page.keyboard.press('/');
      expect(await page.evaluate('document.activeElement && document.activeElement.id')).to.equal('change-query');
      // typed into the box, a letter is a letter
      await page.keyboard.type('gi');
      await page.clock.runFor(5_000);
      expect(page.url()).to.match(/\/ui\/changes$/);
      expect(await box.inputValue()).to.equal('gi');
      // a draft gives way to the URL's value when that changes: back from a search empties the box
      await page.clock.resume();
      await page.keyboard.press('Enter');
      await page.waitForURL(/\/ui\/changes\?q=gi$/);
      await page.keyboard.type('x');
      expect(await box.inputValue()).to.equal('gix');
      await page.goBack();
      await page.waitForURL(/\/ui\/changes$/);
      await page.waitForFunction(`document.getElementById('change-query').value === ''`);
      await page.goForward();
      await page.waitForFunction(`document.getElementById('change-query').value === 'gi'`);
      await context.close();
    });

    it("follows the system's dark scheme with every view still clean for axe-core, and a toggle that overrides it", async () => {
      const { context, page } = await signedIn(admin, '/inventory', 'dark');
      const background = () =>
        page.evaluate('getComputedStyle(document.body.parentElement).backgroundColor') as Promise<string>;
      await page.getByRole('table', { name: 'Configuration items' }).waitFor();
      expect(await background()).to.equal('rgb(17, 22, 30)');
      await checkView(page, 'inventory-dark');
      for (const [path, ready] of [
        ['/changes?q=envoy', () => page.getByRole('list', { name: 'Changes' }).waitFor()],
        ['/stats', () => page.getByRole('heading', { name: 'Statistics', level: 1 }).waitFor()],
        ['/sources', () => page.getByRole('table', { name: 'Sources of kubernetes' }).waitFor()],
        ['/admin', () => page.getByRole('heading', { name: 'Administration', level: 1 }).waitFor()],
      ] as const) {
        await page.goto(url(path));
        await ready();
        await settled(page);
        await checkView(page, `${path.slice(1).split('?')[0]}-dark`);
      }
      // system → light → dark → system, remembered across pages
      await page.getByRole('button', { name: 'Theme: system' }).click();
      expect(await background()).to.equal('rgb(246, 247, 249)');
      await page.reload();
      await page.getByRole('button', { name: 'Theme: light' }).waitFor();
      expect(await background()).to.equal('rgb(246, 247, 249)');
      await page.getByRole('button', { name: 'Theme: light' }).click();
      await page.getByRole('button', { name: 'Theme: dark' }).click();
      expect(await background()).to.equal('rgb(17, 22, 30)');
      await context.close();
    });

    it('makes no request while idle, relative windows included: every view side by side for 30 s once its data is in', async () => {
      const { context, page } = await signedIn(admin, '/inventory');
      const ciId = (await app.get('/api/v1/configuration-items?limit=1&sort_by=name', admin)).body.items[0]
        .ci_id as string;
      const views = [
        '/inventory',
        '/changes?range=24h',
        '/changes?q=web&range=24h',
        '/stats?range=7d',
        '/stats',
        `/ci/${ciId}?range=24h`,
        `/ci/${ciId}?range=7d`,
        '/sources',
        '/compare',
      ];
      const counted = new Map<string, number>();
      const pages: Page[] = [];
      for (const view of views) {
        const opened = view === '/inventory' ? page : await context.newPage();
        // and while it loads, it asks each thing once
        const asked: string[] = [];
        opened.on('request', (request) => {
          const at = new URL(request.url());
          if (at.pathname.startsWith('/api/')) asked.push(at.pathname + at.search);
        });
        if (opened !== page) await opened.goto(url(view));
        await settled(opened);
        // a view may load in steps (the compare view's baselines, then its difference)
        await opened.waitForLoadState('networkidle');
        if (opened !== page)
          expect(
            asked.filter((path, index) => asked.indexOf(path) !== index),
            `${view} asked twice`,
          ).to.deep.equal([]);
        // what the page asks from here on: an idle view asks nothing
        counted.set(view, 0);
        opened.on('request', (request) => {
          const asked = new URL(request.url());
          if (asked.pathname.startsWith('/api/') || asked.pathname.startsWith('/auth/'))
            counted.set(view, counted.get(view)! + 1);
        });
        pages.push(opened);
      }
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      expect(Object.fromEntries(counted)).to.deep.equal(Object.fromEntries(views.map((view) => [view, 0])));
      await context.close();
    });

    it('changes the statistics window and clicks a bar through to the change search of that bucket', async () => {
      const { context, page } = await signedIn(admin, '/stats');
      // the default window is a preset of its own, and the chart spans the window the answer covers
      expect(await page.getByRole('radio', { name: 'Last 90 days' }).isChecked()).to.equal(true);
      await page.locator('.chart rect.bar').first().waitFor();
      const stats = (await app.get('/api/v1/changes/stats', admin)).body;
      const labels = await page.locator('.chart text.label').allTextContents();
      const shown = (iso: string) =>
        page.evaluate(`new Date(${JSON.stringify(iso)}).toLocaleString('sv-SE').slice(0, 16)`) as Promise<string>;
      expect(labels[0], 'the y-axis starts at 0').to.equal('0');
      expect(Number(labels[2]!.replace(/,/g, '')), 'the y-axis reaches the tallest bar').to.be.at.least(
        stats.total_changes > 0 ? 1 : 0,
      );
      // the window's bounds stand above the chart; its time axis is labelled at round steps, dates over 90 days
      expect(await page.locator('section.stats p.meta').filter({ hasText: ' – ' }).first().innerText()).to.include(
        await shown(stats.time_range.start),
      );
      const days = await page.locator('.chart g.tick.time text').allTextContents();
      expect(days.length, days.join(' ')).to.be.within(4, 8);
      for (const day of days) expect(day).to.match(/^\d\d-\d\d$/);
      await page.getByRole('radio', { name: 'Last 24 hours' }).check();
      await page.waitForURL(/range=24h/);
      await page.getByRole('radio', { name: 'By hour' }).check();
      await page.waitForURL(/group_by=hour/);
      const bar = (kind: string) =>
        page
          .locator('.chart a')
          .filter({ has: page.locator(`rect.${kind}`) })
          .first();
      await bar('updated').waitFor();
      await checkView(page, 'statistics');
      const count = async (kind: string) => Number((await bar(kind).getAttribute('aria-label'))!.split(' ')[0]);
      const updated = await count('updated');
      await bar('updated').click();
      await page.waitForURL(/\/ui\/changes\?from=.*&to=.*&change_type=UPDATED/);
      await page.getByRole('list', { name: 'Changes' }).waitFor();
      await page.getByText(new RegExp(`of ${updated.toLocaleString('en')}$`)).waitFor();
      await page.goBack();
      const created = await count('created');
      await bar('created').click();
      await page.waitForURL(/\/ui\/changes\?from=.*&to=.*&change_type=CREATED/);
      await page.getByRole('list', { name: 'Changes' }).waitFor();
      await page.getByText(new RegExp(`of ${created.toLocaleString('en')}$`)).waitFor();
      await context.close();
    });

    it('triggers a source and follows its run to the end without a refresh, its counts in words', async () => {
      const pushed = await app.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: 'agents', collector_type: 'universal' },
      });
      expect(pushed.status, pushed.text).to.equal(201);
      const { context, page } = await signedIn(admin, '/sources');
      const table = page.getByRole('table', { name: 'Sources of kubernetes' });
      await table.waitFor();
      // a push-only source nothing has pushed to yet is not shown as healthy, nor is its collector
      await page.getByText('no data yet · 0/1 sources healthy, 1 awaiting first data').waitFor();
      await page.getByRole('table', { name: 'Sources of universal' }).getByText('no push yet').waitFor();
      await checkView(page, 'sources');
      await page.getByRole('button', { name: 'Collect now east' }).click();
      await page.getByRole('status').filter({ hasText: 'Collection of east queued.' }).waitFor();
      const runs = page.getByRole('table', { name: 'Recent runs of kubernetes' });
      await runs.getByText('queued').first().waitFor();
      await collect();
      // no click: the view polls while a run is queued or running
      const latest = runs.locator('tbody tr').first();
      await latest.getByText('succeeded').waitFor();
      const result = await latest.locator('td').last().innerText();
      expect(result).to.match(/(^|, )received \d+(,|$)/);
      expect(result).to.match(/relationships \((\w+ \d+, ){2}\w+ \d+\)/);
      expect(result).to.include('unresolved');
      expect(result).to.not.include('[object');
      await context.close();
    });

    it('creates an svc key with ticked permissions and sources, offering a scoped key only its own rights', async () => {
      const { context, page } = await signedIn(admin, '/admin/keys');
      await page.getByLabel('Name').fill('east reader');
      await page.getByLabel('Tier').selectOption('svc');
      await page.getByText('Nothing chosen: the key would see no data.').waitFor();
      await page.getByRole('group', { name: 'Permissions' }).getByLabel('configuration_items:read').check();
      await page.getByRole('group', { name: 'Data it may see' }).getByLabel('east (every instance)').check();
      await checkView(page, 'admin-key-rights');
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = await page.getByTestId('secret').innerText();
      const keys = (await app.get('/api/v1/api-keys', admin)).body as {
        name: string;
        permissions: string[];
        scopes: unknown;
      }[];
      const made = keys.find((key) => key.name === 'east reader')!;
      expect(made.permissions).to.deep.equal(['configuration_items:read']);
      expect(made.scopes).to.deep.equal([{ source_id: String(sources[0]!.id), scope_id: null }]);
      const seen = (await app.get('/api/v1/configuration-items?limit=1000', secret)).body.items as {
        source_id: number;
      }[];
      expect(seen.length).to.be.greaterThan(0);
      expect(new Set(seen.map((ci) => ci.source_id))).to.deep.equal(new Set([sources[0]!.id]));
      await context.close();

      const keeper = await createKey(app.sql, 'svc', {
        permissions: ['api_keys:read', 'api_keys:write', 'changes:read'],
        scopes: [{ sourceId: String(sources[1]!.id), scopeId: 'west' }],
      });
      const bounded = await signedIn(keeper, '/admin/keys');
      await bounded.page.getByLabel('Tier').selectOption('svc');
      const offered = await bounded.page
        .getByRole('group', { name: 'Permissions' })
        .getByRole('checkbox')
        .evaluateAll((boxes) => boxes.map((box) => box.parentElement!.textContent!.trim()));
      expect(offered).to.deep.equal(['api_keys:read', 'api_keys:write', 'changes:read']);
      const places = await bounded.page.getByRole('group', { name: 'Data it may see' }).getByRole('checkbox').count();
      expect(places).to.equal(1);
      await bounded.page
        .getByRole('group', { name: 'Data it may see' })
        .getByLabel(/· west$/)
        .waitFor();
      await bounded.context.close();
    });

    it('creates a webhook subscription with a filter and the secret shown once, tests it, and redelivers from its delivery log', async () => {
      const received: { headers: Record<string, string>; body: string }[] = [];
      const receiver = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          received.push({
            headers: req.headers as Record<string, string>,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          res.end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const delivery = new SubscriptionDelivery(app.context);
      try {
        const { context, page } = await signedIn(admin, '/admin/subscriptions');
        await page.getByRole('form', { name: 'Add a filter' }).getByLabel('Field').selectOption('change_type');
        await page.getByRole('form', { name: 'Add a filter' }).getByLabel('Value').fill('UPDATED');
        await page.getByRole('form', { name: 'Add a filter' }).getByRole('button', { name: /add/i }).click();
        await page.getByLabel('Name', { exact: true }).fill('alerting');
        await page.getByLabel('Webhook URL').fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`);
        await page.getByRole('button', { name: 'Create subscription' }).click();
        const secret = await page.getByTestId('secret').innerText();
        expect(secret).to.match(/^whsec_/);
        await checkView(page, 'admin-subscriptions');
        await page.getByRole('button', { name: 'Done' }).click();
        const row = page.getByRole('table', { name: 'Subscriptions' }).getByRole('row', { name: /alerting/ });
        await row.getByText('change_type:eq:UPDATED').waitFor();
        await page.getByRole('button', { name: 'Send a test message to alerting' }).click();
        // delivered; the status of a loopback receiver is kept to the server log
        await page
          .getByRole('status')
          .getByText(/Delivered \(/)
          .waitFor();
        expect(new Webhook(secret).verify(received[0]!.body, received[0]!.headers)).to.deep.include({
          type: 'cinv.test',
        });

        const [ci] = (await app.get('/api/v1/configuration-items?limit=1', admin)).body.items as {
          ci_id: string;
          name: string;
        }[];
        await app.sql`update configuration_items set raw_data = jsonb_set(raw_data, '{metadata,labels,ui}', '"subscribed"'), updated_at = now() where ci_id = ${ci!.ci_id}`;
        await app.sql`
          insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_type, change_type, changed_at, changes, changed_fields)
          select tenant_id, ci_id, source_id, scope_id, name, ci_type, 'UPDATED', now(),
                 '[{"field": "raw_data.metadata.labels.ui", "old_value": null, "new_value": "subscribed"}]', '{raw_data.metadata.labels.ui}'
          from configuration_items where ci_id = ${ci!.ci_id}`;
        await delivery.tick();
        await delivery.settle();
        await page.getByRole('link', { name: 'alerting' }).click();
        await page.waitForURL(/\/ui\/admin\/subscriptions\/[0-9a-f-]{36}$/);
        const log = page.getByRole('table', { name: 'Deliveries' });
        await log.getByRole('cell', { name: '#1' }).waitFor();
        await log.getByRole('cell', { name: 'delivered' }).waitFor();
        await checkView(page, 'admin-subscription-deliveries');
        await page.getByRole('button', { name: 'Redeliver batch 1' }).click();
        await log.getByRole('cell', { name: 'pending' }).waitFor();
        await delivery.tick();
        await delivery.settle();
        expect(
          received.filter((r) => JSON.parse(r.body).type === 'cinv.changes').map((r) => r.headers['webhook-id']),
        ).to.have.length(2);
        await context.close();
      } finally {
        await delivery.stop();
        await new Promise<void>((resolve) => receiver.close(() => resolve()));
      }
    });

    it('creates a token for a token-only user with the secret shown once, and revokes it', async () => {
      const { context, page } = await signedIn(admin, '/admin/users');
      await page.getByLabel('Name').fill('Report robot');
      await page.getByRole('button', { name: 'Add token-only user' }).click();
      await page.getByRole('link', { name: 'Report robot' }).click();
      await page.waitForURL(/\/ui\/admin\/users\/[0-9a-f-]{36}$/);
      await page.getByLabel('Token name').fill('nightly export');
      await page.getByRole('button', { name: 'Create token' }).click();
      const secret = await page.getByTestId('secret').innerText();
      expect(secret).to.match(/^cinv_usr_/);
      expect((await app.get('/api/v1/me', secret)).status).to.equal(200);
      await checkView(page, 'admin-tokens');
      await page.getByRole('button', { name: 'Done' }).click();
      expect(await page.getByTestId('secret').count()).to.equal(0);
      await page.getByRole('button', { name: 'Revoke token nightly export' }).click();
      await page.getByRole('button', { name: 'Confirm: Revoke token nightly export' }).click();
      await page.getByText('No tokens.').waitFor();
      expect((await app.get('/api/v1/me', secret)).status).to.equal(401);
      await app.context.audit.flush();
      await page.goto(url('/admin/audit?event_type=token.revoked'));
      await page.getByRole('table', { name: 'Audit events' }).getByText('token.revoked').first().waitFor();
      await checkView(page, 'admin-audit');
      await context.close();
    });

    it('renders a timeline of 5 000 changes as a virtual list: a few dozen rows in the page, every change reached by scrolling', async () => {
      const [web] = await app.sql<
        { ci_id: string }[]
      >`select ci_id from configuration_items where name = 'web' and scope_id = 'west' and ci_type = 'k8s.deployment'`;
      await app.sql`
        insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
        select ci.tenant_id, ci.ci_id, ci.source_id, ci.scope_id, ci.name, ci.namespace, ci.ci_type, 'UPDATED', now() + i * interval '1 ms',
               jsonb_build_array(jsonb_build_object('field', 'raw_data.spec.replicas', 'old_value', i, 'new_value', i + 1)), array['raw_data.spec.replicas']
        from configuration_items ci, generate_series(1, 5000) as i
        where ci.ci_id = ${web!.ci_id}`;
      const { context, page } = await signedIn(admin, `/ci/${web!.ci_id}?reading=exact`);
      await page.getByRole('heading', { name: 'Changes (5,002)' }).waitFor();
      const timeline = page.getByRole('list', { name: 'Change timeline, newest first' });
      await timeline.waitFor();
      expect(await timeline.getByRole('listitem').count()).to.be.within(5, 60);
      const created = timeline.getByRole('button', { name: /Show the diff of CREATED/ });
      const started = performance.now();
      for (let i = 0; i < 400 && (await created.count()) === 0; i++) {
        await timeline.hover();
        await page.mouse.wheel(0, 20_000);
        await page.waitForTimeout(20);
      }
      console.log(`      scrolled through 5 002 changes in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      await created.waitFor();
      // the oldest change at the end, and still only a window of rows in the page
      expect(await timeline.getByRole('listitem').count()).to.be.within(5, 60);
      await context.close();
    });

    it('shows a data-scoped key only its own cluster in every view', async () => {
      const { context, page } = await signedIn(scoped, '/inventory?status=all');
      const mine = await app.get('/api/v1/configuration-items?status=all&limit=1', scoped);
      const everything = await app.get('/api/v1/configuration-items?status=all&limit=1', admin);
      expect(mine.body.total).to.be.greaterThan(0);
      expect(mine.body.total).to.be.lessThan(everything.body.total);
      await page.getByText(new RegExp(`of ${(mine.body.total as number).toLocaleString('en')}$`)).waitFor();
      expect(await page.getByRole('link', { name: 'Administration' }).count()).to.equal(0);
      // a CI of the other cluster does not exist for this key
      const [west] = await app.sql<
        { ci_id: string }[]
      >`select ci_id from configuration_items where scope_id = 'west' limit 1`;
      await page.goto(url(`/ci/${west!.ci_id}`));
      await page.getByRole('alert').filter({ hasText: 'Configuration item not found' }).waitFor();
      // the search finds the deployment's change in its own cluster only
      await page.goto(url('/changes?q=envoy'));
      await page.getByRole('list', { name: 'Changes' }).waitFor();
      expect(await page.getByRole('list', { name: 'Changes' }).locator(':scope > li').count()).to.equal(1);
      const stats = await app.get('/api/v1/changes/stats', scoped);
      await page.goto(url('/stats'));
      await page.locator('.tile').first().waitFor();
      expect(await page.locator('.tile').first().innerText()).to.include(stats.body.total_changes.toLocaleString('en'));
      await page.goto(url('/sources'));
      await page.getByRole('table', { name: 'Sources of kubernetes' }).waitFor();
      expect(
        await page.getByRole('table', { name: 'Sources of kubernetes' }).locator('tbody tr').allInnerTexts(),
      ).to.satisfy((rows: string[]) => rows.length === 1 && rows[0]!.startsWith('east'));
      await context.close();
    });

    it("shows an empty object or array as its value, and an open object's copy button on its summary's line (last: it adds a source of its own)", async () => {
      const created = await app.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: 'trees', collector_type: 'universal' },
      });
      expect(created.status, created.text).to.equal(201);
      const pushed = await app.request('POST', `/api/v1/sources/${created.body.id}/ingest`, {
        key: admin,
        body: {
          items: [
            {
              external_id: 'tree/1',
              ci_type: 'custom.tree',
              name: 'tree-1',
              raw_data: { labels: {}, ports: [], spec: { replicas: 1 } },
            },
          ],
        },
      });
      expect(pushed.status, pushed.text).to.equal(200);
      const ciId = (await app.get('/api/v1/configuration-items?filter=name%3Aeq%3Atree-1', admin)).body.items[0]
        .ci_id as string;
      const { context, page } = await signedIn(admin, `/ci/${ciId}`);
      const tree = page.getByRole('list', { name: 'raw_data' });
      await tree.waitFor();
      // nothing to open: no `{0}` or `[0]` to click
      await tree
        .locator('li:has(> button[aria-label="Copy path raw_data.labels"])')
        .filter({ hasText: 'labels: {}' })
        .waitFor();
      await tree
        .locator('li:has(> button[aria-label="Copy path raw_data.ports"])')
        .filter({ hasText: 'ports: []' })
        .waitFor();
      expect(await tree.locator('.json-size').allInnerTexts()).to.not.include.members(['{0}', '[0]']);
      // the open root's button shares its summary's line
      const summary = (await tree.locator('summary').first().boundingBox())!;
      const button = (await tree.getByRole('button', { name: 'Copy path raw_data', exact: true }).boundingBox())!;
      expect(button.y).to.be.below(summary.y + summary.height);
      expect(button.y + button.height).to.be.above(summary.y);
      await context.close();
    });
  },
);
