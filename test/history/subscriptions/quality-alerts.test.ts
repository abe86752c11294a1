import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { crossings, deliverQualityAlerts } from '../../../src/history/subscriptions/quality-alerts.js';
import { NatsConnections } from '../../../src/history/subscriptions/sinks.js';
import { catchUpQuality } from '../../../src/inventory/quality/service.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { ingest } from '../../support/factories.js';

const service = (name: string, ports: boolean): UniversalRecord => ({
  external_id: `service/shop/${name}`,
  ci_type: 'k8s.service',
  name,
  namespace: null,
  raw_data: { metadata: { name, labels: { team: 'shop' } }, spec: ports ? { ports: [{ port: 80 }] } : {} },
  type_data: {},
});

describe('quality alerts: a score crossing the threshold, delivered to subscriptions that ask', function () {
  this.timeout(60_000);
  let app: TestApp;
  let admin: string;
  let server: Server;
  let url: string;
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];
  const nats = new NatsConnections();

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    app = await startTestApp({ sourceAllowedHosts: ['127.0.0.1'] });
    admin = await createKey(app.sql, 'adm');
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });

  after(async () => {
    await nats.close();
    await new Promise((resolve) => server.close(resolve));
    await app?.close();
  });

  it('tells a crossing below once, signed, then its recovery; a subscription that did not ask hears nothing', async () => {
    const created = await app.request('POST', '/api/v1/subscriptions', {
      key: admin,
      body: { name: 'quality', sink: { type: 'webhook', url }, quality_alerts: true },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.body.quality_alerts).to.equal(true);
    const quiet = await app.request('POST', '/api/v1/subscriptions', {
      key: admin,
      body: { name: 'changes only', sink: { type: 'webhook', url: `${url}?quiet` } },
    });
    expect(quiet.body.quality_alerts).to.equal(false);
    // three of four services lack their required ports (their team label, recommended, is there):
    // completeness (1 + 3 × 0.4) / 4 = 55 %, below the default 80
    await ingest(app.sql, [service('a', true), service('b', false), service('c', false), service('d', false)], {
      source: 'k8s',
    });
    await catchUpQuality(app.context);
    expect(await deliverQualityAlerts(app.context, nats)).to.equal(1);
    expect(received).to.have.length(1);
    const message = new Webhook(created.body.secret).verify(
      received[0]!.body,
      received[0]!.headers as Record<string, string>,
    ) as {
      type: string;
      data: { subscription_id: string; alerts: { measure: string; state: string; score: number }[] };
    };
    expect(message.type).to.equal('cinv.quality');
    expect(message.data.subscription_id).to.equal(created.body.id);
    expect(message.data.alerts.map((a) => [a.measure, a.state, a.score])).to.deep.equal([
      ['completeness', 'below', 55],
    ]);
    expect(received[0]!.headers['webhook-id']).to.match(/^msg_quality_/);
    // told once: nothing more while nothing crosses
    expect(await deliverQualityAlerts(app.context, nats)).to.equal(0);
    await ingest(app.sql, [service('a', true), service('b', true), service('c', true), service('d', true)], {
      source: 'k8s',
    });
    await catchUpQuality(app.context);
    expect(await deliverQualityAlerts(app.context, nats)).to.equal(1);
    const recovered = JSON.parse(received[1]!.body) as { data: { alerts: { measure: string; state: string }[] } };
    expect(recovered.data.alerts.map((a) => [a.measure, a.state])).to.deep.include(['completeness', 'recovered']);
    expect(received.every((r) => !r.body.includes('?quiet'))).to.equal(true);
  });

  it('compares each score with the threshold and what was told last (pure)', () => {
    expect(crossings({ overall: 70, orphans: 90, rules: null }, [], 80)).to.deep.equal([
      { measure: 'overall', state: 'below', score: 70, threshold: 80, previous_score: null },
    ]);
    expect(crossings({ overall: 70 }, [{ measure: 'overall', below: true, score: 60 }], 80)).to.deep.equal([]);
    expect(crossings({ overall: 85 }, [{ measure: 'overall', below: true, score: 60 }], 80)).to.deep.equal([
      { measure: 'overall', state: 'recovered', score: 85, threshold: 80, previous_score: 60 },
    ]);
  });
});
