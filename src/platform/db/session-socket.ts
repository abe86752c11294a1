import type { PGlite } from '@electric-sql/pglite';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';

// Codes of the untyped messages a connection may open with.
const PROTOCOL_3 = 196608;
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
// Not PostgreSQL's: the greeting that marks a connection of the hosting process itself.
const OWN_CONNECTION = 0x63696e76;
const TOKEN_BYTES = 16;

// Typed messages after which the backend answers without waiting for more.
const SYNC = 0x53;
const QUERY = 0x51;
const FLUSH = 0x48;
const TERMINATE = 0x58;
// Messages that name a prepared statement: made by Parse, forgotten by Close ('S').
const PARSE = 0x50;
const CLOSE = 0x43;

function typedMessage(type: number, body: Buffer): Buffer {
  const message = Buffer.alloc(5 + body.length);
  message[0] = type;
  message.writeInt32BE(4 + body.length, 1);
  body.copy(message, 5);
  return message;
}

const ROLLBACK = typedMessage(QUERY, Buffer.from('ROLLBACK\0'));
const SYNC_MESSAGE = typedMessage(SYNC, Buffer.alloc(0));
const tooManyConnections = typedMessage(
  0x45,
  Buffer.from('SFATAL\0VFATAL\0C53300\0Mtoo many connections to the embedded database\0\0'),
);

/** Messages the backend answers as a whole; `last` is the type of the last one (0: the startup message). */
interface Unit {
  bytes: Buffer;
  last: number;
}

interface Client {
  socket: net.Socket;
  /** A connection of the hosting process, whose queries its own gate has admitted already. */
  own: boolean;
  started: boolean;
  /** Bytes received and not yet split into messages. */
  inbound: Buffer;
  /** Messages of the unit still being received. */
  partial: Buffer[];
  /** Complete units not yet run, oldest first. */
  units: Unit[];
  /** Waiting for its turn: for admission, or in the ready queue. */
  queued: boolean;
  /** Holds a slot of the admission, from admission to the end of its turn. */
  admitted: boolean;
  /** Its last unit ended in Flush: the backend holds its unnamed statement or portal until Sync. */
  midSequence: boolean;
  closed: boolean;
  /** Its named prepared statements: they outlive the client in the shared session unless closed. */
  statements: Set<string>;
}

/** Where turns of other processes queue together with the hosting process's own queries. */
export interface TurnAdmission {
  acquireWithoutDeadline(): Promise<void>;
  release(): void;
}

export interface SessionSocketOptions {
  db: PGlite;
  path: string;
  maxConnections: number;
}

/**
 * Serves one PGlite database on a unix socket to several PostgreSQL clients. PGlite is a single
 * backend session, so clients take turns at it: a client keeps the turn from its first message
 * until the backend is idle again after one of its Sync or simple Query messages. An
 * extended-query sequence (Parse, Bind, Describe, Execute, a Flush in between, up to Sync) and a
 * whole transaction (BEGIN until COMMIT or ROLLBACK) therefore run without another client's
 * messages in between, as on a backend of their own: nobody replaces another client's unnamed
 * portal, skips its messages after an error, or sees its open transaction. A client that goes
 * away during its turn has what it left open rolled back, so nobody waits for it forever, and the
 * statements it prepared are closed (postgres.js names them with a prefix of its connection, so
 * clients' names do not meet).
 *
 * The hosting process queues its queries in its gate. Other processes' turns queue there too
 * (see `admitThrough`), so a `cinv` command beside the server waits its turn behind the requests
 * already waiting instead of taking the database back after every one of its transactions.
 */
export class SessionSocketServer {
  private readonly server: net.Server;
  private readonly clients = new Set<Client>();
  private readonly ready: Client[] = [];
  /** The client whose turn it is, while the backend is mid-sequence or in its transaction. */
  private owner: Client | undefined;
  private admission: TurnAdmission | undefined;
  private running = false;
  private draining: Promise<void> = Promise.resolve();
  private readonly token = randomBytes(TOKEN_BYTES);
  private readonly foreignListeners: (() => void)[] = [];
  /** Prepared statements of departed clients, closed before the next turn. */
  private orphans: string[] = [];

  constructor(private readonly options: SessionSocketOptions) {
    this.server = net.createServer((socket) => this.accept(socket));
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.path, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  /** From now on, turns of connections from other processes are admitted through `admission`. */
  admitThrough(admission: TurnAdmission): void {
    this.admission = admission;
  }

  /** Called after each unit another process's connection ran (it may have written), once it is done; returns the way to stop. */
  onForeignUnit(listener: () => void): () => void {
    this.foreignListeners.push(listener);
    return () => {
      const at = this.foreignListeners.indexOf(listener);
      if (at !== -1) this.foreignListeners.splice(at, 1);
    };
  }

  /** A connection of the hosting process (for postgres.js's `socket` option). */
  connectOwn(): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.options.path, () => {
        socket.off('error', reject);
        const greeting = Buffer.alloc(8 + TOKEN_BYTES);
        greeting.writeInt32BE(greeting.length, 0);
        greeting.writeInt32BE(OWN_CONNECTION, 4);
        this.token.copy(greeting, 8);
        socket.write(greeting);
        resolve(socket);
      });
      socket.once('error', reject);
    });
  }

  /** Closes every connection, rolling back a transaction left open, and stops listening. */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const client of [...this.clients]) {
      client.socket.destroy();
      this.disconnect(client);
    }
    await closed;
    await this.draining;
  }

  private accept(socket: net.Socket): void {
    if (this.clients.size >= this.options.maxConnections) {
      socket.end(tooManyConnections);
      return;
    }
    const client: Client = {
      socket,
      own: false,
      started: false,
      inbound: Buffer.alloc(0),
      partial: [],
      units: [],
      queued: false,
      admitted: false,
      midSequence: false,
      closed: false,
      statements: new Set(),
    };
    this.clients.add(client);
    socket.setNoDelay(true);
    socket.on('data', (data) => this.receive(client, data));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.disconnect(client));
  }

  private receive(client: Client, data: Buffer): void {
    if (client.closed) return;
    client.inbound = client.inbound.length > 0 ? Buffer.concat([client.inbound, data]) : data;
    while (!client.closed && this.takeMessage(client));
    if (client.units.length > 0 && client !== this.owner) this.enqueue(client);
    this.pump();
  }

  /** Moves one complete message from the client's inbound bytes to its units; false when none is complete. */
  private takeMessage(client: Client): boolean {
    const inbound = client.inbound;
    if (!client.started) return this.takeOpening(client);
    if (inbound.length < 5) return false;
    const length = 1 + inbound.readInt32BE(1);
    if (inbound.length < length) return false;
    const type = inbound[0]!;
    client.inbound = inbound.subarray(length);
    if (type === TERMINATE) {
      client.socket.end();
      this.disconnect(client);
      return false;
    }
    if (type === PARSE || type === CLOSE) this.noteStatement(client, type, inbound.subarray(5, length));
    client.partial.push(inbound.subarray(0, length));
    if (type === SYNC || type === QUERY || type === FLUSH) {
      client.units.push({ bytes: Buffer.concat(client.partial), last: type });
      client.partial = [];
    }
    return true;
  }

  private noteStatement(client: Client, type: number, body: Buffer): void {
    const named = type === PARSE ? body : body[0] === 0x53 ? body.subarray(1) : undefined;
    const end = named?.indexOf(0) ?? -1;
    if (!named || end <= 0) return;
    const name = named.toString('utf8', 0, end);
    if (type === PARSE) client.statements.add(name);
    else client.statements.delete(name);
  }

  /** The untyped messages before the startup message is through, and the startup message itself. */
  private takeOpening(client: Client): boolean {
    const inbound = client.inbound;
    if (inbound.length < 8) return false;
    const length = inbound.readInt32BE(0);
    if (inbound.length < length) return false;
    const code = inbound.readInt32BE(4);
    client.inbound = inbound.subarray(length);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      client.socket.write('N');
      return true;
    }
    if (code === OWN_CONNECTION && length === 8 + TOKEN_BYTES) {
      client.own = timingSafeEqual(inbound.subarray(8, length), this.token);
      return true;
    }
    if (code !== PROTOCOL_3) {
      // a cancel request among them: PGlite has no backend process to interrupt
      client.socket.destroy();
      return false;
    }
    client.started = true;
    client.units.push({ bytes: Buffer.from(inbound.subarray(0, length)), last: 0 });
    return true;
  }

  /** Queues a client with work for its turn; other processes' clients are admitted first. */
  private enqueue(client: Client): void {
    if (client.queued || client.closed) return;
    client.queued = true;
    const admission = this.admission;
    if (client.own || !admission) {
      this.ready.push(client);
      return;
    }
    void admission.acquireWithoutDeadline().then(() => {
      if (client.closed) {
        admission.release();
        return;
      }
      client.admitted = true;
      this.ready.push(client);
      this.pump();
    });
  }

  private endTurn(client: Client): void {
    if (this.owner === client) this.owner = undefined;
    if (client.admitted) {
      client.admitted = false;
      this.admission?.release();
    }
  }

  private disconnect(client: Client): void {
    if (client.closed) return;
    client.closed = true;
    client.units = [];
    client.partial = [];
    this.clients.delete(client);
    this.orphans.push(...client.statements);
    client.statements.clear();
    const waiting = this.ready.indexOf(client);
    if (waiting !== -1) this.ready.splice(waiting, 1);
    // the owner's rollback runs in the drain, between two units, as does closing orphaned statements
    if (client === this.owner) this.pump();
    else {
      this.endTurn(client);
      if (this.orphans.length > 0) this.pump();
    }
  }

  private pump(): void {
    if (this.running) return;
    this.running = true;
    this.draining = this.drain();
  }

  private async drain(): Promise<void> {
    try {
      for (;;) {
        const owner = this.owner;
        if (owner?.closed) {
          await this.abandon(owner);
          this.endTurn(owner);
          continue;
        }
        if (!owner && this.orphans.length > 0) await this.closeOrphans();
        const client = owner ?? this.ready.shift();
        if (!client) return;
        client.queued = false;
        const unit = client.units.shift();
        if (!unit) {
          // the owner is still sending; a queued client always has a unit, but never keeps a slot without one
          if (owner) return;
          this.endTurn(client);
          continue;
        }
        this.owner = client;
        await this.runUnit(client, unit);
      }
    } finally {
      // cleared in the same step as the loop ends, or work queued a tick later would wait for nobody
      this.running = false;
    }
  }

  private async runUnit(client: Client, unit: Unit): Promise<void> {
    try {
      await this.execute(unit.bytes, (data) => {
        if (!client.closed && client.socket.writable) client.socket.write(Buffer.from(data));
      });
      if (!client.own) for (const listener of this.foreignListeners) listener();
    } catch {
      // the session is in an unknown state for this client: it goes, and what it left open is rolled back
      client.midSequence = true;
      client.socket.destroy();
      this.disconnect(client);
      return;
    }
    client.midSequence = unit.last === FLUSH;
    if (client.midSequence || this.options.db.isInTransaction() || client.closed) return;
    this.endTurn(client);
    if (client.units.length > 0) this.enqueue(client);
  }

  /**
   * Rolls back what a departed client left open: an extended-query sequence that never reached
   * Sync (after an error the backend skips everything up to Sync, so Sync follows the ROLLBACK)
   * and an explicit transaction.
   */
  private async abandon(client: Client): Promise<void> {
    const discard = () => undefined;
    try {
      if (client.midSequence) await this.execute(Buffer.concat([ROLLBACK, SYNC_MESSAGE]), discard);
      if (this.options.db.isInTransaction()) await this.execute(ROLLBACK, discard);
    } catch {
      // PGlite refuses to run anything more: it is closing
    }
  }

  /** Closes the prepared statements departed clients left in the session, between two turns. */
  private async closeOrphans(): Promise<void> {
    const names = this.orphans;
    this.orphans = [];
    const closes = names.map((name) =>
      typedMessage(CLOSE, Buffer.concat([Buffer.from('S'), Buffer.from(name), Buffer.alloc(1)])),
    );
    try {
      await this.execute(Buffer.concat([...closes, SYNC_MESSAGE]), () => undefined);
    } catch {
      // PGlite refuses to run anything more: it is closing
    }
  }

  private execute(bytes: Buffer, onData: (data: Uint8Array) => void): Promise<void> {
    const { db } = this.options;
    return db.runExclusive(() =>
      db.execProtocolRawStream(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), { onRawData: onData }),
    );
  }
}
