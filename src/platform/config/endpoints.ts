import { ConfigError, type Env } from './env.js';

/** The servers beside this one that the configuration names: a database replica, OpenSearch and Redis. */

/** A replica follows a PostgreSQL server: the embedded database has none. */
export function replicaUrl(env: Env, databaseUrl: string | undefined): string | undefined {
  const url = env.DATABASE_REPLICA_URL || undefined;
  if (url === undefined) return undefined;
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new ConfigError('DATABASE_REPLICA_URL', 'must start with postgres:// or postgresql://');
  if (!databaseUrl)
    throw new ConfigError('DATABASE_REPLICA_URL', 'needs DATABASE_URL: the embedded database has no replicas');
  return url;
}

export function opensearchUrl(env: Env): string | undefined {
  const raw = env.OPENSEARCH_URL || undefined;
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('OPENSEARCH_URL', 'must be a URL such as http://localhost:9200');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError('OPENSEARCH_URL', 'must start with http:// or https://');
  return raw;
}

export function indexName(env: Env): string {
  const name = env.CINV_OPENSEARCH_INDEX || 'cinv-changes';
  // OpenSearch index names: lower case, no spaces or the characters it reserves
  if (!/^[a-z0-9][a-z0-9_.-]{0,100}$/.test(name)) {
    throw new ConfigError(
      'CINV_OPENSEARCH_INDEX',
      'must be a lower-case OpenSearch index name (letters, digits, _ . -)',
    );
  }
  return name;
}

export function redisUrl(env: Env): string | undefined {
  const raw = env.REDIS_URL || undefined;
  if (raw !== undefined && !/^rediss?:\/\//.test(raw))
    throw new ConfigError('REDIS_URL', 'must start with redis:// or rediss://');
  return raw;
}
