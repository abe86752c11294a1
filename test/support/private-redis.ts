import { Redis } from 'ioredis';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, startPrivateProcess, type PrivateProcess } from './private-process.js';

export const REDIS_SERVER = '/usr/bin/redis-server';

/**
 * A redis-server of a test's own on a loopback port, without persistence, in a directory of its
 * own; `extra` adds arguments (`--requirepass`, `--replicaof`, cluster settings).
 */
export function startRedis(name: string, extra: (port: number, dir: string) => string[] = () => []) {
  return startPrivateProcess({
    name,
    command: REDIS_SERVER,
    args: (port, dir) => [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      ...extra(port, dir),
    ],
  });
}

/** A Redis Sentinel of a test's own watching one primary (its configuration file is rewritten by it, so it is the sentinel's). */
export function startSentinel(primaryPort: number, primaryPassword: string): Promise<PrivateProcess> {
  return startPrivateProcess({
    name: 'redis-sentinel',
    command: REDIS_SERVER,
    prepare: async (port, dir) => {
      const lines = [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor main 127.0.0.1 ${primaryPort} 1`,
        `sentinel auth-pass main ${primaryPassword}`,
        'sentinel down-after-milliseconds main 60000',
      ];
      writeFileSync(path.join(dir, 'sentinel.conf'), lines.join('\n') + '\n');
    },
    args: (_port, dir) => [path.join(dir, 'sentinel.conf'), '--sentinel'],
  });
}

/** A two-node cluster: the first node holds every slot, the second replicates it. */
export async function startCluster(): Promise<{ nodes: PrivateProcess[]; destroy(): Promise<void> }> {
  const nodes: PrivateProcess[] = [];
  const buses: number[] = [];
  const destroy = async () => {
    for (const node of nodes) await node.destroy();
  };
  for (let i = 0; i < 2; i++) {
    const bus = await freePort();
    buses.push(bus);
    nodes.push(
      await startRedis(`redis-cluster${i}`, () => [
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-port',
        String(bus),
        '--cluster-node-timeout',
        '5000',
      ]),
    );
  }
  const [a, b] = nodes.map((n) => new Redis({ port: n.port, host: '127.0.0.1', lazyConnect: true }));
  try {
    await a!.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    // the bus port is not the default port + 10000 here: MEET is told it
    await a!.call('CLUSTER', 'MEET', '127.0.0.1', String(nodes[1]!.port), String(buses[1]));
    const primaryId = String(await a!.call('CLUSTER', 'MYID'));
    await until(async () => {
      await b!.call('CLUSTER', 'REPLICATE', primaryId);
      return true;
    }, 'the second node to replicate the first');
    await until(
      async () => /slave/.test(String(await a!.call('CLUSTER', 'NODES'))),
      'the first node to see its replica',
    );
  } catch (error) {
    await destroy();
    throw error;
  } finally {
    a!.disconnect();
    b!.disconnect();
  }
  return { nodes, destroy };
}

/** Polls `ready` (errors count as not yet) for at most 15 s. */
export async function until(ready: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await ready()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`, { cause: last });
}
