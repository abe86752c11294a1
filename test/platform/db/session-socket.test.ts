import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { embeddedClientOptions, guardDatabase, type Database, type Sql } from '../../../src/platform/db/database.js';
import { hostEmbedded } from '../../../src/platform/db/embedded.js';

/** A bare protocol connection, to leave the session in states postgres.js never leaves it in. */
class RawClient {
  private received = Buffer.alloc(0);
  private waiter: (() => void) | undefined;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (data) => {
      this.received = Buffer.concat([this.received, data]);
      this.waiter?.();
    });
  }

  static async connect(socketPath: string): Promise<RawClient> {
    const socket = net.connect(socketPath);
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const client = new RawClient(socket);
    const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
    const startup = Buffer.alloc(8 + params.length);
    startup.writeInt32BE(startup.length, 0);
    startup.writeInt32BE(196608, 4);
    params.copy(startup, 8);
    socket.write(startup);
    await client.readyForQuery();
    return client;
  }

  send(...messages: [string, Buffer][]): void {
    this.socket.write(Buffer.concat(messages.map(([type, body]) => message(type, body))));
  }

  /** Waits for the next ReadyForQuery and returns its transaction status. */
  async readyForQuery(): Promise<string> {
    const status = await this.next('Z');
    return String.fromCharCode(status[0]!);
  }

  /** Waits for the backend's next message of this type, and returns its body. */
  async next(type: string): Promise<Buffer> {
    for (;;) {
      let offset = 0;
      while (offset + 5 <= this.received.length) {
        const end = offset + 1 + this.received.readInt32BE(offset + 1);
        if (end > this.received.length) break;
        if (this.received[offset] === type.charCodeAt(0)) {
          const body = this.received.subarray(offset + 5, end);
          this.received = this.received.subarray(end);
          return body;
        }
        offset = end;
      }
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }
}

function message(type: string, body: Buffer): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out.write(type, 0);
  out.writeInt32BE(4 + body.length, 1);
  body.copy(out, 5);
  return out;
}

const text = (value: string) => Buffer.from(`${value}\0`);
const query = (sql: string): [string, Buffer] => ['Q', text(sql)];
const parse = (sql: string): [string, Buffer] => ['P', Buffer.concat([text(''), text(sql), Buffer.from([0, 0])])];
const bind: [string, Buffer] = ['B', Buffer.concat([text(''), text(''), Buffer.from([0, 0, 0, 0, 0, 0])])];
const execute: [string, Buffer] = ['E', Buffer.concat([text(''), Buffer.from([0, 0, 0, 0])])];
const flush: [string, Buffer] = ['H', Buffer.alloc(0)];

describe('embedded database socket: one session shared by several clients', function () {
  this.timeout(60_000);
  let dir: string;
  let socketPath: string;
  let host: Database;
  const others: Sql[] = [];
  // connections that do not greet as the hosting process: what a `cinv` command beside it opens
  const other = () => {
    const sql = postgres(embeddedClientOptions(socketPath));
    others.push(sql);
    return sql;
  };

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cinv-session-'));
    socketPath = path.join(dir, '.s.PGSQL.5432');
    host = guardDatabase(await hostEmbedded({ pgDataDir: undefined, socketPath }), {
      poolSize: 1,
      acquireTimeoutMs: 10_000,
      statementTimeoutMs: 0,
    });
    await host.sql`create table marks (client text not null, n int not null)`;
  });
  beforeEach(() => host.sql`truncate marks`);
  after(async () => {
    await Promise.all(others.map((sql) => sql.end({ timeout: 1 })));
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs a client's transaction whole: another client neither sees it open nor writes into it", async () => {
    const cli = other();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inside!: () => void;
    const begun = new Promise<void>((resolve) => (inside = resolve));
    const transaction = cli.begin(async (tx) => {
      await tx`insert into marks values ('cli', 1)`;
      inside();
      await held;
      await tx`insert into marks values ('cli', 2)`;
      return tx<{ n: number }[]>`select count(*)::int as n from marks`;
    });
    await begun;
    const reads = [
      host.sql<{ n: number }[]>`select count(*)::int as n from marks`,
      host.sql`insert into marks values ('server', 1)`,
      other()<{ n: number }[]>`select count(*)::int as n from marks`,
    ];
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    const [seenInside] = await transaction;
    expect(seenInside!.n, 'the transaction saw a statement of another client').to.equal(2);
    const [serverRead, , otherRead] = (await Promise.all(reads)) as { n: number }[][];
    // whoever ran after the transaction saw all of it, never half
    expect(serverRead![0]!.n).to.be.oneOf([2, 3]);
    expect(otherRead![0]!.n).to.be.oneOf([2, 3]);
    expect(
      (await host.sql`select client, n from marks order by client, n`).map((r) => `${r.client}${r.n}`),
    ).to.deep.equal(['cli1', 'cli2', 'server1']);
  });

  it('keeps concurrent extended-query sequences and their errors apart', async () => {
    const clients = [host.sql, other(), other(), other()];
    const results = await Promise.all(
      clients.flatMap((sql, c) =>
        Array.from({ length: 60 }, async (_, i) => {
          if (i % 7 === 3) {
            const error = await sql`select 1 / ${i - i}::int as x`.then(
              () => undefined,
              (e: Error) => e,
            );
            return error instanceof Error && /division by zero/.test(error.message)
              ? 'failed as asked'
              : `unexpected: ${String(error)}`;
          }
          const [row] = await sql<{ x: string }[]>`select ${`${c}:${i}`}::text as x`;
          return row!.x === `${c}:${i}` ? 'answered' : `crossed: ${row!.x}`;
        }),
      ),
    );
    expect(results.filter((r) => r !== 'answered' && r !== 'failed as asked')).to.deep.equal([]);
  });

  it('queues the turns of other processes behind the queries the hosting process has waiting', async () => {
    const cli = other();
    let transactions = 0;
    let stop = false;
    const busy = (async () => {
      while (!stop) {
        await cli.begin(async (tx) => {
          await tx`insert into marks values ('cli', ${transactions})`;
          await new Promise((resolve) => setTimeout(resolve, 20));
        });
        transactions++;
      }
    })();
    while (transactions < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    const before = transactions;
    // ten queries at once: admitted one at a time, all ahead of the command's next transaction
    await Promise.all(Array.from({ length: 10 }, (_, i) => host.sql`select ${i}::int as i`));
    const during = transactions - before;
    stop = true;
    await busy;
    expect(during).to.be.at.most(2);
  });

  it('rolls back the open transaction of a client that goes away, and lets the others go on', async () => {
    const raw = await RawClient.connect(socketPath);
    raw.send(query("begin; insert into marks values ('gone', 1)"));
    expect(await raw.readyForQuery()).to.equal('T');
    const waiting = host.sql<{ n: number }[]>`select count(*)::int as n from marks`;
    raw.socket.destroy();
    expect((await waiting)[0]!.n).to.equal(0);
    expect(await other()`select * from marks`).to.deep.equal([]);
  });

  it('rolls back an extended-query sequence a client left before its Sync', async () => {
    const raw = await RawClient.connect(socketPath);
    raw.send(parse("insert into marks values ('unsynced', 1)"), bind, execute, flush);
    await raw.next('C');
    const waiting = other()<{ n: number }[]>`select count(*)::int as n from marks`;
    raw.socket.destroy();
    expect((await waiting)[0]!.n).to.equal(0);
    expect(await host.sql`select * from marks`).to.deep.equal([]);
  });

  it('rolls back after a client left with an error pending until Sync inside its transaction', async () => {
    const raw = await RawClient.connect(socketPath);
    raw.send(query("begin; insert into marks values ('failed', 1)"));
    expect(await raw.readyForQuery()).to.equal('T');
    raw.send(parse('select 1 / 0'), bind, execute, flush);
    await raw.next('E');
    raw.socket.destroy();
    expect(await host.sql`select * from marks`).to.deep.equal([]);
    expect((await other()`select 1 as one`)[0]).to.deep.equal({ one: 1 });
  });

  it('closes the statements a departed client prepared, and keeps those of the clients still there', async () => {
    const prepared = async (text: string) =>
      (
        await host.sql<{ n: number }[]>`select count(*)::int as n from pg_prepared_statements where statement = ${text}`
      )[0]!.n;
    const hostQuery = (n: number) => host.sql<{ n: number }[]>`select ${n}::int + 1 as n`;
    expect((await hostQuery(1))[0]!.n).to.equal(2);
    expect(await prepared('select $1::int + 1 as n')).to.equal(1);

    const leaving = postgres({ ...embeddedClientOptions(socketPath), prepare: true });
    expect((await leaving<{ n: number }[]>`select ${2}::int * 3 as n`)[0]!.n).to.equal(6);
    expect(await prepared('select $1::int * 3 as n')).to.equal(1);
    const raw = await RawClient.connect(socketPath);
    const named = (name: string, sql: string): [string, Buffer] => [
      'P',
      Buffer.concat([text(name), text(sql), Buffer.from([0, 0])]),
    ];
    raw.send(
      named('raw_kept', 'select 7'),
      named('raw_closed', 'select 8'),
      ['C', Buffer.concat([Buffer.from('S'), text('raw_closed')])],
      ['S', Buffer.alloc(0)],
    );
    await raw.readyForQuery();
    expect(await prepared('select 7')).to.equal(1);
    expect(await prepared('select 8')).to.equal(0);

    await leaving.end();
    raw.socket.destroy();
    // the closes run before the next turn
    await other()`select 1`;
    expect(await prepared('select $1::int * 3 as n')).to.equal(0);
    expect(await prepared('select 7')).to.equal(0);
    expect(await prepared('select $1::int + 1 as n')).to.equal(1);
    expect((await hostQuery(4))[0]!.n).to.equal(5);
  });
});
