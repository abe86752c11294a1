import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, startPrivateProcess, type PrivateProcess } from './private-process.js';

const run = promisify(execFile);

/** The machine's RabbitMQ server script (the package's own, not the /usr/sbin wrapper that switches to the rabbitmq user). */
export const RABBITMQ_SERVER = '/usr/lib/rabbitmq/bin/rabbitmq-server';
const RABBITMQCTL = '/usr/lib/rabbitmq/bin/rabbitmqctl';

/**
 * A RabbitMQ node of a test's own: its own node name, AMQP, distribution and management ports,
 * base directory and Erlang cookie (HOME is its directory), so the machine's own RabbitMQ is left
 * as it is. The default user is an administrator whose password the caller chooses (a canary).
 */
export interface PrivateRabbit {
  server: PrivateProcess;
  node: string;
  amqpPort: number;
  managementPort: number;
  /** `http://127.0.0.1:<management port>` */
  url: string;
  admin: { username: string; password: string };
  /** A request to the management API as the administrator; the parsed answer (or null for none). */
  api(method: string, apiPath: string, body?: unknown, timeoutMs?: number): Promise<unknown>;
  /** rabbitmqctl against this node, with `--formatter json` when asked; its stdout. */
  ctl(...args: string[]): Promise<string>;
}

export async function startPrivateRabbit(options: {
  adminPassword: string;
  clusterName: string;
}): Promise<PrivateRabbit> {
  const amqpPort = await freePort();
  const managementPort = await freePort();
  const distPort = await freePort();
  const node = `cinv-${randomBytes(4).toString('hex')}@localhost`;
  const admin = { username: 'cinv-admin', password: options.adminPassword };
  const url = `http://127.0.0.1:${managementPort}`;
  const authorization = `Basic ${Buffer.from(`${admin.username}:${admin.password}`).toString('base64')}`;
  const api = async (method: string, apiPath: string, body?: unknown, timeoutMs = 30_000) => {
    const reply = await fetch(`${url}${apiPath}`, {
      method,
      headers: { authorization, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await reply.text();
    if (!reply.ok) throw new Error(`${method} ${apiPath}: HTTP ${reply.status} ${text}`);
    return text ? (JSON.parse(text) as unknown) : null;
  };
  const envOf = (dir: string): NodeJS.ProcessEnv => ({
    HOME: dir,
    RABBITMQ_NODENAME: node,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, 'log'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_CONFIG_FILE: path.join(dir, 'rabbitmq'),
    RABBITMQ_ADVANCED_CONFIG_FILE: path.join(dir, 'advanced.config'),
    RABBITMQ_CONF_ENV_FILE: path.join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_PID_FILE: path.join(dir, 'rabbitmq.pid'),
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  });
  let directory = '';
  const server = await startPrivateProcess({
    name: 'rabbitmq',
    command: RABBITMQ_SERVER,
    port: amqpPort,
    args: () => [],
    env: (_port, dir) => envOf(dir),
    prepare: async (_port, dir) => {
      directory = dir;
      writeFileSync(path.join(dir, 'enabled_plugins'), '[rabbitmq_management].\n');
      writeFileSync(path.join(dir, 'rabbitmq-env.conf'), '');
      writeFileSync(
        path.join(dir, 'rabbitmq.conf'),
        [
          `management.tcp.port = ${managementPort}`,
          'management.tcp.ip = 127.0.0.1',
          `cluster_name = ${options.clusterName}`,
          `default_user = ${admin.username}`,
          `default_pass = ${admin.password}`,
          'default_user_tags.administrator = true',
          'loopback_users = none',
          // the management statistics every half second, so a test sees counts soon after a publish
          'collect_statistics_interval = 500',
          'disk_free_limit.absolute = 10MB',
          'log.console = false',
          'log.file.level = warning',
          '',
        ].join('\n'),
      );
    },
    // ready when the management API answers with the node's statistics (they come a moment after it starts)
    ready: async () => {
      const reply = await fetch(`${url}/api/nodes`, { headers: { authorization }, signal: AbortSignal.timeout(2000) });
      return reply.ok && ((await reply.json()) as { fd_total?: number }[])[0]?.fd_total !== undefined;
    },
    startTimeoutMs: 90_000,
  });
  return {
    server,
    node,
    amqpPort,
    managementPort,
    url,
    admin,
    api,
    async ctl(...args: string[]) {
      const { stdout } = await run(RABBITMQCTL, ['-n', node, ...args], {
        env: { ...process.env, ...envOf(directory) },
        timeout: 60_000,
      });
      return stdout;
    },
  };
}
