import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../../src/platform/config/config.js';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';

describe('reconcile lane settings', () => {
  it('writes in lanes on a PostgreSQL server with a pool of three connections or more, unless CINV_RECONCILE_LANES is false', () => {
    const server = { DATABASE_URL: 'postgres://cinv@db/cinv', CINV_SECRET: SECRET };
    expect(loadConfig(server).reconcileLanes).to.equal(true);
    expect(loadConfig({ ...server, CINV_DB_POOL_SIZE: '3' }).reconcileLanes).to.equal(true);
    expect(
      loadConfig({ ...server, CINV_DB_POOL_SIZE: '2' }).reconcileLanes,
      'a lane would wait behind the other for a connection',
    ).to.equal(false);
    expect(loadConfig({ ...server, CINV_RECONCILE_LANES: 'false' }).reconcileLanes).to.equal(false);
    expect(() => loadConfig({ ...server, CINV_RECONCILE_LANES: 'sometimes' })).to.throw(
      ConfigError,
      /CINV_RECONCILE_LANES/,
    );
  });

  it('keeps one lane on the embedded database, which has one session', () => {
    expect(
      loadConfig({ CINV_DATA_DIR: '/tmp/cinv-lane-settings', CINV_RECONCILE_LANES: 'true' }).reconcileLanes,
    ).to.equal(false);
  });
});
