import { expect } from 'chai';
import { nodeRecord, type Overview } from '../../../../src/collection/types/rabbitmq/records.js';
import { thisMachine } from '../../../support/local-machine.js';

const target = (host: string) => ({ base: `http://${host}:15672/`, endpoint: `${host}:15672`, serverName: 'mq' });
const node = (name: string) => ({ name, running: true, fd_total: 1024 });

describe('the rabbitmq type: host facts of nodes', () => {
  const overview: Overview = {
    node: 'rabbit@mq-1',
    listeners: [
      { node: 'rabbit@mq-1', protocol: 'amqp', ip_address: '::', port: 5672 },
      { node: 'rabbit@mq-2', protocol: 'amqp', ip_address: '10.0.0.2', port: 5672 },
    ],
  };
  const host = (name: string, at: string) => nodeRecord(node(name), overview, target(at)).type_data!.host;

  it('gives this machine to the node that answered over loopback, and to none of its peers', () => {
    const { machine_id, product_uuid } = thisMachine();
    expect(host('rabbit@mq-1', '127.0.0.1')).to.deep.equal({
      hostname: 'mq-1',
      addresses: [],
      machine_id,
      product_uuid,
      endpoint: '127.0.0.1:15672',
    });
    expect(host('rabbit@mq-2', '[::1]')).to.deep.equal({
      hostname: 'mq-2',
      addresses: ['10.0.0.2'],
      machine_id: null,
      product_uuid: null,
      endpoint: '[::1]:15672',
    });
  });

  it('gives it to no node of a cluster reached elsewhere', () => {
    expect(host('rabbit@mq-1', 'mq.internal')).to.deep.include({ machine_id: null, product_uuid: null });
  });
});
