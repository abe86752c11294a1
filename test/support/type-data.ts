import { expect } from 'chai';
import { collectorType } from '../../src/collection/types/registry.js';
import { typeDataKey } from '../../src/inventory/configuration-items/presenter.js';
import type { TestApp } from './app.js';

/**
 * Checks that the `type_data` a collector type wrote for each of its CI types has exactly the keys
 * its documentation (the OpenAPI description) names; `metrics.<name>` documents a key of `metrics`.
 */
export async function expectDocumentedTypeData(app: TestApp, key: string, typeName: string): Promise<void> {
  const documented = collectorType(typeName)!.ciTypes!;
  for (const [ciType, keys] of Object.entries(documented)) {
    const kind = typeDataKey(ciType);
    const reply = await app.get(
      `/api/v1/configuration-items?status=all&limit=1000&include_type_data=true&filter=ci_type:eq:${ciType}`,
      key,
    );
    expect(reply.status, reply.text).to.equal(200);
    const items = reply.body.items as { attributes: Record<string, Record<string, unknown>> }[];
    expect(items.length, `${typeName} wrote ${ciType} CIs`).to.be.above(0);
    const top = [...new Set(keys.map((k) => k.split('.')[0]!))].sort();
    for (const item of items)
      expect(Object.keys(item.attributes[kind] ?? {}).sort(), `${ciType} type_data keys`).to.deep.equal(top);
  }
}
