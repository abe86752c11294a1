import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { ids, tagsOf } from './records.js';

/**
 * What `/api/users` answers. It also holds `password_hash` and `hashing_algorithm`: they are never
 * read into a record (the fields below are picked one by one, nothing is copied whole).
 */
export interface UserInfo {
  name: string;
  tags?: string[] | string;
  limits?: Record<string, unknown>;
}

export interface Permission {
  user: string;
  vhost: string;
  configure: string;
  write: string;
  read: string;
}

export interface TopicPermission {
  user: string;
  vhost: string;
  exchange: string;
  write: string;
  read: string;
}

function byUser<T extends { user: string }>(rows: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    let list = out.get(row.user);
    if (!list) out.set(row.user, (list = []));
    list.push(row);
  }
  return out;
}

/** Users with their permissions per virtual host, and `can_access` to each virtual host they hold a permission in. */
export function userRecords(
  users: UserInfo[],
  permissions: Permission[],
  topics: TopicPermission[],
): UniversalRecord[] {
  const grants = byUser(permissions);
  const topicGrants = byUser(topics);
  return users.map((user) => {
    const own = (grants.get(user.name) ?? [])
      .map((p) => ({ vhost: p.vhost, configure: p.configure, write: p.write, read: p.read }))
      .sort((a, b) => a.vhost.localeCompare(b.vhost));
    const ownTopics = (topicGrants.get(user.name) ?? [])
      .map((p) => ({ vhost: p.vhost, exchange: p.exchange, write: p.write, read: p.read }))
      .sort((a, b) => `${a.vhost}\u0000${a.exchange}`.localeCompare(`${b.vhost}\u0000${b.exchange}`));
    const config = {
      tags: tagsOf(user.tags),
      limits: user.limits ?? {},
      permissions: own,
      topic_permissions: ownTopics,
    };
    return {
      external_id: ids.user(user.name),
      ci_type: 'rabbitmq.user',
      name: user.name,
      raw_data: config,
      type_data: { tags: config.tags, limits: config.limits, vhosts: own.map((p) => p.vhost) },
      relationships: [...new Set(own.map((p) => p.vhost))].map((vhost) => ({
        type: 'can_access',
        target_external_id: ids.vhost(vhost),
      })),
    };
  });
}

export interface PolicyInfo {
  vhost: string;
  name: string;
  pattern: string;
  'apply-to': string;
  definition: Record<string, unknown>;
  priority: number;
}

/** A policy (or an operator policy, which caps what users' policies may set) and the virtual host it applies in. */
export function policyRecord(policy: PolicyInfo, operator: boolean): UniversalRecord {
  const config = {
    pattern: policy.pattern,
    apply_to: policy['apply-to'],
    definition: policy.definition ?? {},
    priority: policy.priority,
    operator,
  };
  return {
    external_id: ids.inVhost(operator ? 'operator-policy' : 'policy', policy.vhost, policy.name),
    ci_type: 'rabbitmq.policy',
    name: policy.name,
    namespace: policy.vhost,
    raw_data: config,
    type_data: { ...config, vhost: policy.vhost },
    relationships: [{ type: 'applies_in', target_external_id: ids.vhost(policy.vhost) }],
  };
}
