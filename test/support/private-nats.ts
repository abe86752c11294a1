import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, startPrivateProcess, type PrivateProcess } from './private-process.js';

/** The machine's nats-server, wherever the distribution put it. */
export const NATS_SERVER = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'].find((f) =>
  existsSync(f),
);

export interface PrivateNats extends PrivateProcess {
  /** `nats://127.0.0.1:<client port>` */
  clientUrl: string;
  /** `http://127.0.0.1:<monitoring port>` (the process's `port`) */
  monitorUrl: string;
}

export interface NatsSetup {
  serverName: string;
  /**
   * The configuration file's body beside the listen addresses, the name and JetStream (accounts,
   * leaf node remotes, limits), given the directory.
   */
  extra?: (dir: string) => string;
}

/**
 * A nats-server with JetStream of a test's own: client and monitoring ports on loopback, its
 * store in its own directory, configured by a file there. Ready when /healthz answers, that is
 * when JetStream has started too.
 */
export async function startPrivateNats(setup: NatsSetup): Promise<PrivateNats> {
  if (!NATS_SERVER) throw new Error('nats-server is not installed on this machine');
  const clientPort = await freePort();
  const server = await startPrivateProcess({
    name: 'nats',
    command: NATS_SERVER,
    prepare: async (port, dir) => {
      const conf = [
        `listen: "127.0.0.1:${clientPort}"`,
        `http: "127.0.0.1:${port}"`,
        `server_name: "${setup.serverName}"`,
        `jetstream { store_dir: "${path.join(dir, 'js')}", max_memory_store: 256MB, max_file_store: 1GB }`,
        setup.extra?.(dir) ?? '',
      ].join('\n');
      writeFileSync(path.join(dir, 'nats.conf'), conf);
    },
    args: (_port, dir) => ['-c', path.join(dir, 'nats.conf')],
    ready: async (port) => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200,
  });
  return Object.assign(server, {
    clientUrl: `nats://127.0.0.1:${clientPort}`,
    monitorUrl: `http://127.0.0.1:${server.port}`,
  });
}
