import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Connection } from 'mariadb';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { createKey, useTestApp, type RequestOptions } from '../../support/app.js';
import { describeWith } from '../../support/dependencies.js';
import { thisMachine } from '../../support/local-machine.js';
import { mariadbInstalled, startPrivateMariadb, type PrivateMariadb } from '../../support/private-mariadb.js';
import { expectDocumentedTypeData } from '../../support/type-data.js';
import { grantedRoles, withoutSecrets } from '../../../src/collection/types/mariadb/grants.js';

const REASON =
  '(skipped outside CI when the MariaDB server binaries mariadbd and mariadb-install-db are not installed; under CI=true a missing binary fails)';

/** The collector's account holds exactly the grants docs/collectors.md documents as its least privilege. */
const LEAST_PRIVILEGE = [
  'GRANT SELECT ON mysql.* TO ?@?',
  'GRANT SHOW DATABASES, SHOW VIEW, SLAVE MONITOR, REPLICATION MASTER ADMIN ON *.* TO ?@?',
];

interface Item {
  ci_id: string;
  name: string;
  status: string;
  scope_id: string | null;
  last_seen: string;
  type_data?: Record<string, any>;
}

interface Change {
  change_type: string;
  changes: { field: string; old_value: unknown; new_value: unknown }[];
}

describeWith(mariadbInstalled())(`the mariadb collector type against private MariaDB servers ${REASON}`, function () {
  this.timeout(60_000);
  const app = useTestApp();
  const tag = randomBytes(4).toString('hex');
  const canary = `canary${randomBytes(8).toString('hex')}`;
  const password = `collector-${canary}`;
  /** Every response body and log line the suite saw: the canary must be in none. */
  const seen: string[] = [];
  let primary: PrivateMariadb;
  let replica: PrivateMariadb;
  let root: Connection;
  let replicaRoot: Connection;
  let admin: string;

  before(async function () {
    this.timeout(120_000);
    [primary, replica] = await Promise.all([
      startPrivateMariadb('mariadb-primary', () => ['--server-id=1', '--log-bin=binlog', '--binlog-format=ROW']),
      startPrivateMariadb('mariadb-replica', (port) => [
        '--server-id=2',
        '--skip-log-bin',
        '--relay-log=relay',
        '--report-host=127.0.0.1',
        `--report-port=${port}`,
      ]),
    ]);
    root = await primary.client();
    for (const statement of [
      `CREATE USER 'cinv'@'127.0.0.1' IDENTIFIED BY '${password}'`,
      ...LEAST_PRIVILEGE.map((grant) => grant.replace('?@?', `'cinv'@'127.0.0.1'`)),
      `CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl-${canary}'`,
      `GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'`,
      'CREATE DATABASE shop CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci',
      'CREATE TABLE shop.orders (id INT PRIMARY KEY AUTO_INCREMENT, note VARCHAR(200))',
      'CREATE ROLE auditor',
      'CREATE ROLE reader',
      'GRANT auditor TO reader',
      'GRANT SELECT ON shop.* TO reader',
      `CREATE USER 'app'@'%' IDENTIFIED BY 'app-${canary}' WITH MAX_USER_CONNECTIONS 7`,
      `GRANT reader TO 'app'@'%'`,
      `SET DEFAULT ROLE reader FOR 'app'@'%'`,
      `CREATE USER 'locked'@'localhost' ACCOUNT LOCK`,
    ])
      await root.query(statement);
    replicaRoot = await replica.client();
    await replicaRoot.query(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='repl', MASTER_PASSWORD='repl-${canary}', MASTER_USE_GTID=slave_pos`,
    );
    await replicaRoot.query('START SLAVE');
    // the replica replays the primary's set-up (the collector's account too) and registers with it
    const [{ pos }] = await root.query('SELECT @@gtid_binlog_pos AS pos');
    const until = Date.now() + 20_000;
    for (;;) {
      const [{ applied }] = await replicaRoot.query('SELECT @@gtid_slave_pos AS applied');
      const hosts = await root.query('SHOW SLAVE HOSTS');
      if (applied === pos && hosts.length === 1) break;
      if (Date.now() > until) throw new Error(`the replica did not catch up:\n${replica.log().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  after(async () => {
    await replicaRoot?.end().catch(() => undefined);
    await root?.end().catch(() => undefined);
    await replica?.destroy();
    await primary?.destroy();
  });

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });
  afterEach(() => {
    seen.push(...app.current.logs);
  });

  const request = async (method: string, url: string, options: RequestOptions = {}) => {
    const reply = await app.current.request(method, url, { key: admin, ...options });
    seen.push(reply.text);
    return reply;
  };
  const get = (url: string) => request('GET', url);
  const addSource = async (name: string, server: PrivateMariadb, credentials: object) => {
    const added = await request('POST', '/api/v1/sources', {
      body: {
        name,
        collector_type: 'mariadb',
        endpoint: `mysql://127.0.0.1:${server.port}`,
        config: { server_name: name },
      },
    });
    expect(added.status, added.text).to.equal(201);
    const put = await request('PUT', `/api/v1/sources/${added.body.id}/credentials`, { body: credentials });
    expect(put.status, put.text).to.equal(204);
    return added.body as { id: number; collector_id: number };
  };
  const basic = { type: 'basic', username: 'cinv', password };
  const collect = async (source: { id: number; collector_id: number }) => {
    app.current.clock.now = new Date(app.current.clock.now.getTime() + 60_000);
    const triggered = await request('POST', `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`);
    expect(triggered.status, triggered.text).to.equal(202);
    const started = Date.now();
    const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 10_000, pollMs: 60_000 });
    await worker.tick();
    await worker.idle();
    await worker.stop();
    const took = Date.now() - started;
    const run = (await get(`/api/v1/collection-runs/${triggered.body.run_id}`)).body;
    if (run.status === 'succeeded') {
      console.log(`      mariadb collection took ${took} ms`);
      expect(took, 'a collection of the test server').to.be.below(5000);
    }
    return run;
  };
  const items = async (ciType: string): Promise<Item[]> => {
    const list = `/api/v1/configuration-items?status=all&limit=1000&filter=ci_type:eq:${ciType}`;
    const plain = (await get(list)).body.items as Item[];
    const typed = (await get(`${list}&include_type_data=true`)).body.items as {
      id: string;
      attributes: Record<string, any>;
    }[];
    const byId = new Map(typed.map((t) => [t.id, t.attributes[ciType.split('.')[1]!]]));
    return plain.map((item) => ({ ...item, type_data: byId.get(item.ci_id) }));
  };
  /** The CI of that type and name, of one server when several have one (a database replicated). */
  const named = async (ciType: string, name: string, scope?: string) => {
    const found = (await items(ciType)).find((i) => i.name === name && (!scope || i.scope_id === scope));
    expect(found, `${ciType} ${name}`).to.not.equal(undefined);
    return found!;
  };
  const outgoing = async (ciId: string) => {
    const reply = await get(`/api/v1/configuration-items/${ciId}/relationships?direction=outgoing&limit=100`);
    expect(reply.status, reply.text).to.equal(200);
    return (reply.body.items as { relationship_type: string; related_ci_name: string; related_ci_type: string }[])
      .map((r) => `${r.relationship_type} ${r.related_ci_type} ${r.related_ci_name}`)
      .sort();
  };
  const history = async (ciId: string) => (await get(`/api/v1/ci-changes/${ciId}`)).body.items as Change[];

  const primaryName = `primary-${tag}`;
  const expectServer = async () => {
    const [vars] = await root.query(
      'SELECT @@version AS version, @@hostname AS hostname, @@max_connections AS max_connections, @@innodb_buffer_pool_size AS pool, @@binlog_format AS binlog_format',
    );
    const server = await named('mariadb.server', primaryName);
    expect(server.type_data).to.deep.include({
      version: vars.version,
      flavour: 'mariadb',
      server_uuid: null,
      server_id: 1,
      max_connections: vars.max_connections,
      innodb_buffer_pool_size: vars.pool,
      log_bin: true,
      binlog_format: vars.binlog_format,
      read_only: false,
    });
    // reached over loopback: the server's own host name stays, the machine's ids are this one's
    expect(server.type_data!.host).to.deep.equal({
      ...thisMachine(),
      hostname: String(vars.hostname).toLowerCase(),
      addresses: ['127.0.0.1'],
      endpoint: `127.0.0.1:${primary.port}`,
    });
    expect(server.type_data!.metrics.uptime_seconds).to.be.a('number');
    return server;
  };
  const expectDatabases = async () => {
    const schemas = (await root.query('SHOW DATABASES')) as { Database: string }[];
    const expected = schemas.map((s) => s.Database).filter((d) => !/^(information|performance)_schema$/.test(d));
    const databases = (await items('mariadb.database')).filter((d) => expected.includes(d.name));
    expect(databases.map((d) => d.name).sort()).to.include.members(expected);
    const shop = await named('mariadb.database', 'shop', primaryName);
    expect(shop.type_data).to.deep.include({
      character_set: 'utf8mb4',
      collation: 'utf8mb4_unicode_ci',
      system: false,
    });
    expect(shop.type_data!.metrics.tables).to.equal(1);
    expect(await outgoing(shop.ci_id)).to.include(`hosted_on mariadb.server ${primaryName}`);
    return shop;
  };
  const expectAccounts = async () => {
    const accounts = (await root.query(
      "SELECT CONCAT(User, '@', Host) AS name FROM mysql.user WHERE is_role = 'N'",
    )) as {
      name: string;
    }[];
    const users = (await items('mariadb.user')).map((u) => u.name);
    expect(users).to.include.members(accounts.map((a) => a.name));
    const appUser = await named('mariadb.user', 'app@%', primaryName);
    const grants = ((await root.query("SHOW GRANTS FOR 'app'@'%'")) as Record<string, string>[]).map(
      (g) => Object.values(g)[0]!,
    );
    expect(
      grants.some((g) => g.includes('IDENTIFIED BY PASSWORD')),
      'the server shows a hash',
    ).to.equal(true);
    expect(appUser.type_data).to.deep.include({
      user: 'app',
      host: '%',
      plugin: 'mysql_native_password',
      account_locked: false,
      max_user_connections: 7,
      default_role: 'reader',
      roles: ['reader'],
    });
    expect(appUser.type_data!.grants).to.deep.equal([
      'GRANT `reader` TO `app`@`%`',
      'GRANT USAGE ON *.* TO `app`@`%` WITH MAX_USER_CONNECTIONS 7',
      'SET DEFAULT ROLE `reader` FOR `app`@`%`',
    ]);
    expect(await outgoing(appUser.ci_id)).to.deep.equal(['has_role mariadb.role reader']);
    expect((await named('mariadb.user', 'locked@localhost', primaryName)).type_data).to.deep.include({
      account_locked: true,
    });
    const reader = await named('mariadb.role', 'reader', primaryName);
    expect(reader.type_data!.grants).to.include('GRANT SELECT ON `shop`.* TO `reader`');
    expect(await outgoing(reader.ci_id)).to.deep.equal(['member_of mariadb.role auditor']);
  };
  const expectReplication = async () => {
    const replicaCi = await named('mariadb.replica', `127.0.0.1:${replica.port}`);
    expect(replicaCi.type_data).to.deep.include({ server_id: 2, host: '127.0.0.1', port: replica.port });
    expect(await outgoing(replicaCi.ci_id)).to.deep.equal([`replicates_from mariadb.server ${primaryName}`]);
    const channel = await named('mariadb.replication_source', `127.0.0.1:${primary.port}`);
    expect(channel.type_data).to.deep.include({
      connection_name: null,
      source_user: 'repl',
      source_server_id: 1,
      using_gtid: 'Slave_Pos',
    });
    expect(channel.type_data!.metrics.io_running).to.equal('Yes');
    const replicaServer = await named('mariadb.server', `replica-${tag}`);
    expect(await outgoing(replicaServer.ci_id)).to.deep.equal([
      `replicates_from mariadb.replication_source 127.0.0.1:${primary.port}`,
    ]);
  };

  it('discovers the servers, databases, accounts and replication as the servers report them', async () => {
    const source = await addSource(primaryName, primary, basic);
    const replicaSource = await addSource(`replica-${tag}`, replica, basic);
    for (const s of [source, replicaSource]) {
      const run = await collect(s);
      expect(run.status, run.error).to.equal('succeeded');
    }
    await expectServer();
    await expectDatabases();
    await expectAccounts();
    await expectReplication();
    await expectDocumentedTypeData(app.current, admin, 'mariadb');
  });

  it('records a configuration change and a new database as changes, and rows written as metrics only', async () => {
    const source = await addSource(primaryName, primary, basic);
    expect((await collect(source)).status).to.equal('succeeded');
    const server = await named('mariadb.server', primaryName);
    const shop = await named('mariadb.database', 'shop', primaryName);

    // nothing changed: no change record
    expect((await collect(source)).counts.changes).to.equal(0);
    // rows only move metrics
    const sizeBefore = shop.type_data!.metrics.size_bytes as number;
    await root.query(`INSERT INTO shop.orders (note) SELECT REPEAT('x', 190) FROM shop.seq_1_to_3000`);
    await root.query('ANALYZE TABLE shop.orders');
    expect((await collect(source)).counts.changes).to.equal(0);
    expect((await named('mariadb.database', 'shop', primaryName)).type_data!.metrics.size_bytes).to.be.above(
      sizeBefore,
    );

    // a variable changed and a database added: one UPDATED naming the variable, one CREATED
    const [{ old }] = await root.query('SELECT @@max_connections AS old');
    await root.query('SET GLOBAL max_connections = 77');
    await root.query('CREATE DATABASE added');
    try {
      const changed = await collect(source);
      expect(changed.status, changed.error).to.equal('succeeded');
      expect(changed.counts.changes).to.equal(2);
    } finally {
      await root.query(`SET GLOBAL max_connections = ${old}`);
    }
    const updates = (await history(server.ci_id)).filter((c) => c.change_type === 'UPDATED');
    expect(updates.map((u) => u.changes)).to.deep.equal([
      [{ field: 'raw_data.variables.max_connections', old_value: old, new_value: 77 }],
    ]);
    const added = await named('mariadb.database', 'added', primaryName);
    expect((await history(added.ci_id)).map((c) => c.change_type)).to.deep.equal(['CREATED']);

    // a dropped database is not seen any more: it ages through the snapshot rules, it is not archived now
    await root.query('DROP DATABASE added');
    expect((await collect(source)).status).to.equal('succeeded');
    const gone = await named('mariadb.database', 'added', primaryName);
    expect(gone.status).to.equal('active');
    expect(gone.last_seen).to.equal(added.last_seen);
  });

  it('fails the run while the server is down, archiving nothing, and collects again once it is back', async () => {
    const source = await addSource(`outage-${tag}`, primary, basic);
    expect((await collect(source)).status).to.equal('succeeded');
    const before = await items('mariadb.database');
    await primary.stop();
    try {
      const down = await collect(source);
      expect(down.status).to.equal('failed');
      expect(down.error).to.equal(`no server answers at 127.0.0.1:${primary.port}`);
      const detail = (await get(`/api/v1/sources/${source.id}`)).body;
      expect(detail.health_status.status).to.equal('unhealthy');
      expect(detail.health_status.details.message).to.equal(down.error);
      const collector = (await get(`/api/v1/collectors/${source.collector_id}/health`)).body;
      expect(collector.status).to.equal('degraded');
      const after = await items('mariadb.database');
      expect(after.map((d) => [d.name, d.status, d.last_seen])).to.deep.equal(
        before.map((d) => [d.name, d.status, d.last_seen]),
      );
    } finally {
      await primary.start();
      root = await primary.client();
    }
    expect((await collect(source)).status).to.equal('succeeded');
  });

  it('fails the run with a clear error on wrong credentials or credentials of another kind', async () => {
    const wrong = await addSource(`wrong-${tag}`, primary, { ...basic, password: `wrong-${canary}` });
    const refused = await collect(wrong);
    expect(refused.status).to.equal('failed');
    expect(refused.error).to.equal(`the server at 127.0.0.1:${primary.port} refused the credentials`);
    expect((await get(`/api/v1/sources/${wrong.id}`)).body.health_status.status).to.equal('unhealthy');

    const token = await addSource(`token-${tag}`, primary, { type: 'token', token: `token-${canary}` });
    const other = await collect(token);
    expect(other.status).to.equal('failed');
    expect(other.error).to.include('basic credentials');

    const http = await request('POST', '/api/v1/sources', {
      body: { name: `http-${tag}`, collector_type: 'mariadb', endpoint: 'https://db.example.com' },
    });
    expect(http.status).to.equal(422);
  });

  it('never shows a password, a hash or the replication password in a response or a log line', async () => {
    // the canaries are really there: in the replica's channel settings and behind the account hashes
    expect(readFileSync(path.join(replica.dir, 'data', 'master.info'), 'utf8')).to.include(canary);
    const hashes = (
      (await root.query("SELECT authentication_string AS hash FROM mysql.user WHERE authentication_string <> ''")) as {
        hash: string;
      }[]
    ).map((h) => h.hash);
    expect(hashes.length).to.be.above(2);
    expect(seen.length).to.be.above(20);
    for (const text of seen) {
      expect(text).to.not.include(canary);
      for (const hash of hashes) expect(text).to.not.include(hash);
    }
  });
});

describe('the mariadb collector type: grant lines', () => {
  it('drops every form of authentication clause and keeps the rest of the line', () => {
    const hash = '*7648E52EC79D4BB879B7B913F0B8BBF8DC4AB6CC';
    expect(
      withoutSecrets(`GRANT USAGE ON *.* TO \`u\`@\`%\` IDENTIFIED BY PASSWORD '${hash}' WITH MAX_USER_CONNECTIONS 3`),
    ).to.equal('GRANT USAGE ON *.* TO `u`@`%` WITH MAX_USER_CONNECTIONS 3');
    expect(
      withoutSecrets(
        "GRANT ALL PRIVILEGES ON *.* TO `a`@`h` IDENTIFIED VIA ed25519 USING 'ZIgUREUg5PVgQ6LskhXmO+eZLS0nC8be6HPjYWR4YJY' OR unix_socket REQUIRE SSL WITH GRANT OPTION",
      ),
    ).to.equal('GRANT ALL PRIVILEGES ON *.* TO `a`@`h` REQUIRE SSL WITH GRANT OPTION');
    expect(
      withoutSecrets(
        "GRANT USAGE ON *.* TO 'b'@'%' IDENTIFIED WITH caching_sha2_password AS '$A$005$abcdefghijklmnopqrstuvwxyz'",
      ),
    ).to.equal("GRANT USAGE ON *.* TO 'b'@'%'");
    // a quoted name that looks like a keyword is not taken for one
    expect(withoutSecrets('GRANT SELECT ON `identified`.* TO `c`@`%`')).to.equal(
      'GRANT SELECT ON `identified`.* TO `c`@`%`',
    );
    expect(withoutSecrets(`GRANT PROXY ON ''@'%' TO 'root'@'localhost' WITH GRANT OPTION ${hash}`)).to.not.include(
      hash,
    );
  });

  it('reads the roles a grant line grants, as MariaDB and MySQL write them', () => {
    expect(grantedRoles('GRANT `reader` TO `app`@`%`')).to.deep.equal(['reader']);
    expect(grantedRoles('GRANT `r``1` TO `app`@`%` WITH ADMIN OPTION')).to.deep.equal(['r`1']);
    expect(grantedRoles('GRANT `r1`@`%`,`r2`@`%` TO `u`@`%`')).to.deep.equal(['r1@%', 'r2@%']);
    expect(grantedRoles('GRANT SELECT ON `shop`.* TO `reader`')).to.deep.equal([]);
  });
});
