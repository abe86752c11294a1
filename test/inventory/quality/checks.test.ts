import { expect } from 'chai';
import { catchUpQuality } from '../../../src/inventory/quality/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { useTestApp } from '../../support/app.js';
import { ingest } from '../../support/factories.js';

const pod = (name: string, extra: Record<string, unknown> = {}, relationships: UniversalRecord['relationships'] = []): UniversalRecord => ({
  external_id: `pod/shop/${name}`,
  ci_type: 'k8s.pod',
  name,
  namespace: 'shop',
  raw_data: { metadata: { name, namespace: 'shop', labels: { team: 'payments' } }, spec: { nodeName: 'node-1', ...extra } },
  type_data: {},
  relationships,
});

describe('quality checks', () => {
  const app = useTestApp();

  it('records what a pod lacks', async () => {
    await ingest(app.current.sql, [pod('web-1')]);
    await catchUpQuality(app.current.context);
    const rows = await app.current.sql`select * from ci_quality`;
    console.log(rows);
    const counts = await app.current.sql`select * from quality_count_deltas`;
    console.log(counts);
  });
});
