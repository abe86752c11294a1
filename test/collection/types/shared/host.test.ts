import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { hostFacts, isLoopback } from '../../../../src/collection/types/shared/host.js';
import { localMachine, readLocalMachine } from '../../../../src/collection/types/shared/local-machine.js';
import { thisMachine } from '../../../support/local-machine.js';

describe('host facts', () => {
  it('tells loopback hosts and addresses from every other', () => {
    for (const host of [
      '127.0.0.1',
      '127.1.2.3',
      '127.255.255.254',
      '::1',
      '[::1]',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      'localhost',
      'LOCALHOST.',
      'db.localhost',
    ])
      expect(isLoopback(host), host).to.equal(true);
    for (const host of [
      '128.0.0.1',
      '10.0.0.1',
      '0.0.0.0',
      '::',
      '::2',
      '::ffff:10.0.0.1',
      'localhost.example.com',
      'mylocalhost',
      'db.internal',
      '',
      null,
      undefined,
    ])
      expect(isLoopback(host), String(host)).to.equal(false);
  });

  it('normalises what a server says, and fills in nothing of a server elsewhere', () => {
    for (const local of [false, undefined])
      expect(
        hostFacts({
          hostname: ' DB1.Example.com. ',
          addresses: ['10.0.0.2', '[FE80::1]', '0.0.0.0', '*', null, '10.0.0.2', '127.0.0.1'],
          machine_id: ' ABC ',
          endpoint: 'db1.example.com:5432',
          local,
        }),
      ).to.deep.equal({
        hostname: 'db1.example.com',
        addresses: ['10.0.0.2', '127.0.0.1', 'fe80::1'],
        machine_id: 'abc',
        product_uuid: null,
        endpoint: 'db1.example.com:5432',
      });
    expect(hostFacts({ endpoint: 'db:1' })).to.deep.equal({
      hostname: null,
      addresses: [],
      machine_id: null,
      product_uuid: null,
      endpoint: 'db:1',
    });
  });

  it('fills in from this machine what a loopback server leaves out, and keeps what it says', () => {
    const here = thisMachine();
    expect(here.hostname).to.equal(hostname().toLowerCase().replace(/\.+$/, ''));
    expect(localMachine()).to.deep.equal(here);
    expect(hostFacts({ addresses: ['127.0.0.1'], endpoint: '127.0.0.1:6379', local: true })).to.deep.equal({
      hostname: here.hostname,
      addresses: ['127.0.0.1'],
      machine_id: here.machine_id,
      product_uuid: here.product_uuid,
      endpoint: '127.0.0.1:6379',
    });
    expect(
      hostFacts({ hostname: 'Box', machine_id: 'M1', product_uuid: 'P1', endpoint: 'localhost:1', local: true }),
    ).to.deep.include({ hostname: 'box', machine_id: 'm1', product_uuid: 'p1' });
    // `localhost` names no machine: a server calling itself so gets this machine's name when local, none otherwise
    expect(hostFacts({ hostname: 'localhost', endpoint: 'localhost:1', local: true }).hostname).to.equal(here.hostname);
    expect(hostFacts({ hostname: 'localhost', endpoint: '10.0.0.1:1' }).hostname).to.equal(null);
  });

  describe('this machine', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'cinv-machine-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));
    const file = (name: string, text: string) => {
      const at = path.join(dir, name);
      writeFileSync(at, text);
      return at;
    };

    it('reads the machine id from the first file that has one, and the product UUID', () => {
      const machine = readLocalMachine({
        machineId: [path.join(dir, 'absent'), file('empty', '\n'), file('dbus', ' 3D1219C7\n'), file('later', 'x')],
        productUuid: [file('uuid', '4C4C4544-0042\n')],
      });
      expect(machine).to.deep.include({ machine_id: '3d1219c7', product_uuid: '4c4c4544-0042' });
    });

    it('has no id where none can be read, nor before systemd has made one', () => {
      const machine = readLocalMachine({
        machineId: [file('machine-id', 'uninitialized\n'), path.join(dir, 'absent')],
        productUuid: [dir],
      });
      expect(machine).to.deep.include({ machine_id: null, product_uuid: null });
    });
  });
});
