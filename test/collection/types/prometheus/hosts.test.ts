import { expect } from 'chai';
import type { PrometheusApi, Sample } from '../../../../src/collection/types/prometheus/api.js';
import { hostRecords, instanceHost } from '../../../../src/collection/types/prometheus/records.js';
import { thisMachine } from '../../../support/local-machine.js';

/** A server answering each query from the samples given for its metric name, nothing for the others. */
function answering(byMetric: Record<string, Record<string, string>[]>): PrometheusApi {
  return {
    query: (expression: string): Promise<Sample[]> => {
      const name = /^[a-z_0-9]+/.exec(expression)?.[0] ?? '';
      return Promise.resolve((byMetric[name] ?? []).map((metric) => ({ metric, value: [0, '1'] as [number, string] })));
    },
  } as unknown as PrometheusApi;
}

const node = (instance: string, nodename?: string) => ({
  __name__: 'node_uname_info',
  instance,
  job: 'node',
  ...(nodename ? { nodename } : {}),
});

async function hostOf(api: PrometheusApi, local: boolean, instance: string) {
  const records = await hostRecords(api, local);
  return records.find((r) => r.external_id === `host/${instance}`)!.type_data!.host;
}

describe('the prometheus type: host facts of node_exporter hosts', () => {
  it('takes the host part of an instance label', () => {
    expect(instanceHost('10.0.0.5:9100')).to.equal('10.0.0.5');
    expect(instanceHost('node1.example.com:9100')).to.equal('node1.example.com');
    expect(instanceHost('[fd00::5]:9100')).to.equal('fd00::5');
    expect(instanceHost('[::1]')).to.equal('::1');
    expect(instanceHost('fd00::5')).to.equal('fd00::5');
    expect(instanceHost('web-1')).to.equal('web-1');
  });

  it('records the node name, the instance host and the DMI product UUID, and nothing of this machine for a host elsewhere', async () => {
    const api = answering({
      node_uname_info: [node('10.0.0.5:9100', 'Web-1.Example.com')],
      node_dmi_info: [{ instance: '10.0.0.5:9100', product_uuid: '4C4C4544-0042-3510-8052-B4C04F565432' }],
    });
    expect(await hostOf(api, true, '10.0.0.5:9100')).to.deep.equal({
      hostname: 'web-1.example.com',
      addresses: ['10.0.0.5'],
      machine_id: null,
      product_uuid: '4c4c4544-0042-3510-8052-b4c04f565432',
      endpoint: '10.0.0.5:9100',
    });
  });

  it('is this machine only when both Prometheus and the exporter are reached over loopback', async () => {
    const api = answering({ node_uname_info: [node('127.0.0.1:9100'), node('localhost:9101', 'box')] });
    const here = thisMachine();
    expect(await hostOf(api, true, '127.0.0.1:9100')).to.deep.equal({
      ...here,
      addresses: ['127.0.0.1'],
      endpoint: '127.0.0.1:9100',
    });
    expect(await hostOf(api, true, 'localhost:9101')).to.deep.include({ hostname: 'box', machine_id: here.machine_id });
    // a Prometheus elsewhere scraping its own loopback: that machine, which says no more of itself
    expect(await hostOf(api, false, '127.0.0.1:9100')).to.deep.equal({
      hostname: null,
      addresses: ['127.0.0.1'],
      machine_id: null,
      product_uuid: null,
      endpoint: '127.0.0.1:9100',
    });
  });
});
