import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../../src/platform/config/config.js';
import { lsnValue } from '../../../src/platform/db/replica.js';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';

describe('read replica settings and WAL positions', () => {
  it('takes DATABASE_REPLICA_URL only beside DATABASE_URL, as a postgres:// URL, with a 30 s lag bound by default', () => {
    const primary = { DATABASE_URL: 'postgres://cinv@db/cinv', CINV_SECRET: SECRET };
    const config = loadConfig({ ...primary, DATABASE_REPLICA_URL: 'postgres://cinv@replica/cinv' });
    expect(config.databaseReplicaUrl).to.equal('postgres://cinv@replica/cinv');
    expect(config.replicaMaxLagMs).to.equal(30_000);
    expect(
      loadConfig({ ...primary, DATABASE_REPLICA_URL: 'postgres://r/cinv', CINV_REPLICA_MAX_LAG: '2s' }).replicaMaxLagMs,
    ).to.equal(2000);
    expect(loadConfig(primary).databaseReplicaUrl).to.equal(undefined);
    expect(() =>
      loadConfig({ DATABASE_REPLICA_URL: 'postgres://r/cinv', CINV_DATA_DIR: '/tmp/cinv-replica-settings' }),
    ).to.throw(ConfigError, /DATABASE_REPLICA_URL: needs DATABASE_URL/);
    expect(() => loadConfig({ ...primary, DATABASE_REPLICA_URL: 'mysql://r/cinv' })).to.throw(
      ConfigError,
      /DATABASE_REPLICA_URL: must start with postgres/,
    );
  });

  it('orders WAL positions by both halves, the low one as a 32-bit number', () => {
    expect(lsnValue('0/16B3748') < lsnValue('0/16B3750')).to.equal(true);
    expect(lsnValue('0/FFFFFFFF') < lsnValue('1/0')).to.equal(true);
    expect(lsnValue('A/0') > lsnValue('9/FFFFFFFF')).to.equal(true);
    expect(lsnValue('16/B374D848')).to.equal((0x16n << 32n) + 0xb374d848n);
  });
});
