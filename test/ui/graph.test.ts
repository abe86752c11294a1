import { expect } from 'chai';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { createKey, startTestApp, type TestApp } from '../support/app.js';
import { ARTIFACTS, hasChromium, launchChromium, prepareWebInterface, signedIn } from '../support/browser.js';
import { resetDatabase, testDatabase } from '../support/db.js';
import { describeWith } from '../support/dependencies.js';

interface Drawn {
  id: string;
  name: string;
  type: string;
  x: number;
  y: number;
  labelled: boolean;
  label: { x1: number; y1: number; x2: number; y2: number } | null;
  colour: string;
}

/** What the drawing shows: read from its cytoscape instance, handed to the page under test only. */
const drawn = (page: Page) =>
  page.evaluate(`window.__cinvGraph.nodes().map((node) => ({
    id: node.id(),
    name: node.data('label'),
    type: node.data('shape') + ' ' + node.data('colour'),
    x: node.position('x'),
    y: node.position('y'),
    labelled: node.hasClass('labelled'),
    label: node.hasClass('labelled') ? node.renderedBoundingBox({ includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false }) : null,
    colour: 'rgb(' + node.pstyle('color').value.join(',') + ')',
  }))`) as Promise<Drawn[]>;

const overlapping = (nodes: Drawn[]) => {
  const shown = nodes.filter((node) => node.labelled);
  const pairs: string[] = [];
  for (const [i, a] of shown.entries())
    for (const b of shown.slice(i + 1)) {
      const [p, q] = [a.label!, b.label!];
      if (p.x1 < q.x2 && q.x1 < p.x2 && p.y1 < q.y2 && q.y1 < p.y2) pairs.push(`${a.name} / ${b.name}`);
    }
  return pairs;
};

/** WCAG's contrast ratio of two CSS rgb() colours. */
function contrast(one: string, two: string): number {
  const luminance = (colour: string) => {
    const [r, g, b] = colour
      .match(/[\d.]+/g)!
      .slice(0, 3)
      .map(Number)
      .map((channel) => {
        const c = channel / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  };
  const [light, dark] = [luminance(one), luminance(two)].sort((a, b) => b - a);
  return (light! + 0.05) / (dark! + 0.05);
}

describeWith(hasChromium)(
  'the dependency graph in a real Chromium, in both colour schemes (skipped outside CI when /usr/bin/chromium is missing; under CI=true a missing one fails)',
  function () {
    this.timeout(120_000);
    let app: TestApp;
    let browser: Browser;
    let admin: string;
    const ids = new Map<string, string>();

    before(async () => {
      await prepareWebInterface();
      await resetDatabase((await testDatabase()).sql);
      app = await startTestApp();
      admin = await createKey(app.sql, 'adm');
      const source = await app.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name: 'agents', collector_type: 'universal' },
      });
      expect(source.status, source.text).to.equal(201);
      // a node with 50 pods on it and 49 services routing to them (100 items), and a small one of 10
      const items: unknown[] = [];
      const cluster = (node: string, pods: number, services: number) => {
        items.push({
          external_id: `node/${node}`,
          ci_type: 'k8s.node',
          name: node,
          raw_data: { metadata: { name: node } },
        });
        for (let i = 0; i < pods; i++) {
          const pod = `${node}-checkout-api-7f9c4d-${String(i).padStart(2, '0')}`;
          items.push({
            external_id: `pod/shop/${pod}`,
            ci_type: 'k8s.pod',
            name: pod,
            namespace: 'shop',
            raw_data: { metadata: { name: pod } },
            relationships: [{ type: 'runs_on', target_external_id: `node/${node}` }],
          });
        }
        for (let i = 0; i < services; i++) {
          const service = `${node}-svc-${String(i).padStart(2, '0')}`;
          const pod = `${node}-checkout-api-7f9c4d-${String(i).padStart(2, '0')}`;
          items.push({
            external_id: `service/shop/${service}`,
            ci_type: 'k8s.service',
            name: service,
            namespace: 'shop',
            raw_data: { metadata: { name: service } },
            relationships: [{ type: 'routes_to', target_external_id: `pod/shop/${pod}` }],
          });
        }
      };
      cluster('node-hub', 50, 49);
      cluster('node-small', 5, 4);
      const pushed = await app.request('POST', `/api/v1/sources/${(source.body as { id: number }).id}/ingest`, {
        key: admin,
        body: { scope_id: 'east', items },
      });
      expect(pushed.status, pushed.text).to.equal(200);
      for (const row of await app.sql<
        { ci_id: string; name: string }[]
      >`select ci_id, name from configuration_items where name in ('node-hub', 'node-small')`)
        ids.set(row.name, row.ci_id);
      browser = await launchChromium();
    });

    after(async () => {
      await browser?.close();
      await app?.close();
    });

    /** The graph around a node, what depends on it two steps out, drawn in a fresh signed-in browser; every console warning and error is kept. */
    async function opened(node: string, colorScheme: 'light' | 'dark') {
      const complaints: string[] = [];
      const { context, page } = await signedIn(browser, app.baseUrl, admin, {
        landing: `/ci/${ids.get(node)!}`,
        colorScheme,
        prepare: async (context, page) => {
          // the flag hands the drawing's cytoscape instance to the test
          await context.addInitScript('window.__cinvTestHooks = true');
          page.on('console', (message) => {
            if (message.type() === 'warning' || message.type() === 'error')
              complaints.push(`${message.type()}: ${message.text()}`);
          });
          page.on('pageerror', (error) => complaints.push(`pageerror: ${error.message}`));
        },
      });
      // the first visit's 401 is how the page learns it must sign in
      complaints.length = 0;
      const around = page.getByRole('region', { name: 'Around this item' });
      await around.getByRole('radio', { name: 'What depends on it' }).check();
      await around.getByText(/^2 steps away/).waitFor();
      await around.locator('canvas').first().waitFor();
      await page.waitForFunction('window.__cinvGraph && window.__cinvGraph.nodes().length > 1');
      // the labels are placed at the next frame after a move
      await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
      return { context, page, around, complaints };
    }

    for (const scheme of ['light', 'dark'] as const) {
      it(`draws 100 items in ${scheme} mode with no warning, in layers along the dependencies, labels that never overlap and read against the background`, async () => {
        const { context, page, around, complaints } = await opened('node-hub', scheme);
        const nodes = await drawn(page);
        expect(nodes).to.have.length(100);
        await around.locator('.graph-frame').screenshot({ path: path.join(ARTIFACTS, `graph-100-${scheme}.png`) });
        // the drawing spans the page and is tall
        const canvas = (await around.locator('.graph-canvas').boundingBox())!;
        expect(canvas.width).to.be.greaterThan(1200);
        expect(canvas.height).to.be.greaterThan(600);
        expect(overlapping(nodes), 'labels overlapping at the first fit').to.deep.equal([]);
        // left depends on right: services left of their pods, pods left of the node
        const hub = nodes.find((node) => node.name === 'node-hub')!;
        const pods = nodes.filter((node) => node.name.includes('checkout-api'));
        const services = nodes.filter((node) => node.name.includes('-svc-'));
        expect(pods).to.have.length(50);
        for (const pod of pods) expect(pod.x, pod.name).to.be.lessThan(hub.x);
        for (const service of services)
          expect(service.x, service.name).to.be.lessThan(Math.min(...pods.map((pod) => pod.x)));
        // zoomed in, more names fit, and still none overlaps another
        await around.getByRole('button', { name: 'Zoom in' }).click();
        await around.getByRole('button', { name: 'Zoom in' }).click();
        await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
        const closer = await drawn(page);
        expect(closer.filter((node) => node.labelled).length).to.be.greaterThan(0);
        expect(overlapping(closer), 'labels overlapping zoomed in').to.deep.equal([]);
        await around.getByRole('button', { name: 'Fit' }).click();
        // the legend names every type drawn
        const legend = page.getByRole('group', { name: 'Legend of the drawing' });
        for (const type of ['k8s.node', 'k8s.pod', 'k8s.service']) await legend.getByText(type).waitFor();
        if (scheme === 'dark') {
          const background = (await page.evaluate(
            `getComputedStyle(document.querySelector('.graph-canvas')).backgroundColor`,
          )) as string;
          for (const colour of new Set(nodes.map((node) => node.colour))) {
            expect(colour, 'a resolved colour').to.match(/^rgba?\(/);
            expect(contrast(colour, background), `${colour} on ${background}`).to.be.at.least(4.5);
          }
        }
        expect(complaints).to.deep.equal([]);
        await context.close();
      });
    }

    it('shows every name of a graph of 10, none overlapping, and redraws its colours when the theme is toggled', async () => {
      const { context, page, around, complaints } = await opened('node-small', 'light');
      const nodes = await drawn(page);
      expect(nodes).to.have.length(10);
      await around.locator('.graph-frame').screenshot({ path: path.join(ARTIFACTS, 'graph-10-light.png') });
      expect(
        nodes.filter((node) => !node.labelled).map((node) => node.name),
        'names left out',
      ).to.deep.equal([]);
      expect(overlapping(nodes)).to.deep.equal([]);
      const background = async () =>
        (await page.evaluate(`getComputedStyle(document.querySelector('.graph-canvas')).backgroundColor`)) as string;
      const light = nodes[0]!.colour;
      expect(contrast(light, await background())).to.be.at.least(4.5);
      // the theme button goes from the system's to light, then to dark
      const theme = page.getByRole('button', { name: /^Theme:/ });
      await theme.click();
      await theme.click();
      await page.waitForFunction(`document.documentElement.dataset.theme === 'dark'`);
      await page.waitForFunction(
        `'rgb(' + window.__cinvGraph.nodes()[0].pstyle('color').value.join(',') + ')' !== ${JSON.stringify(light)}`,
      );
      const dark = (await drawn(page))[0]!.colour;
      expect(contrast(dark, await background()), `${dark} on the dark background`).to.be.at.least(4.5);
      await around.locator('.graph-frame').screenshot({ path: path.join(ARTIFACTS, 'graph-10-toggled-dark.png') });
      // hovering an item names it, whatever the zoom
      const hub = nodes.find((node) => node.name === 'node-small')!;
      await around.locator('.graph-canvas').scrollIntoViewIfNeeded();
      const box = (await around.locator('.graph-canvas').boundingBox())!;
      const at = (await page.evaluate(
        `window.__cinvGraph.getElementById(${JSON.stringify(hub.id)}).renderedPosition()`,
      )) as { x: number; y: number };
      await page.mouse.move(box.x + at.x, box.y + at.y, { steps: 5 });
      await page.getByRole('tooltip').getByText('node-small').waitFor();
      expect(complaints).to.deep.equal([]);
      await context.close();
    });
  },
);
