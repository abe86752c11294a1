import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo } from '../../platform/auth/scope.js';
import type { Queryable } from '../../platform/db/database.js';
import { apiTime, jsonObject, toJson, typeDataWithMetrics } from './ci-json.js';
import type { CiRow } from './page-store.js';

/* Reads of one CI: as a row, as its detail's JSON, whether the principal may see it. */

/** One CI, if it exists and the principal may see it. `forUpdate` locks it for the transaction. */
export async function findVisibleCi(
  sql: Queryable,
  principal: Principal,
  ciId: string,
  forUpdate = false,
): Promise<CiRow | undefined> {
  const db = sql as Sql;
  const [row] = await db<CiRow[]>`
    select ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.status_updated_at, ls.last_seen,
           ci.created_at, ci.updated_at, ci.raw_data
    from configuration_items ci join ci_last_seen ls on ls.ci_id = ci.ci_id
    where ci.ci_id = ${ciId} and ${visibleTo(db, principal, columnsOf('ci'))}
    ${forUpdate ? db`for update of ci` : db``}`;
  return row;
}

/**
 * One CI as its detail shows it (presentCiDetail's shape), written as JSON text by the database:
 * raw_data and type_data go out as stored instead of being decoded and encoded again. Undefined
 * when it does not exist or the principal may not see it.
 */
export async function findCiDetailJson(sql: Sql, principal: Principal, ciId: string): Promise<string | undefined> {
  const [row] = await sql<{ detail: string }[]>`
    select ${jsonObject(sql, [
      ['ci_id', toJson(sql, sql`ci.ci_id`)],
      ['name', toJson(sql, sql`ci.name`)],
      ['namespace', toJson(sql, sql`ci.namespace`)],
      ['ci_type', toJson(sql, sql`ci.ci_type`)],
      ['status', toJson(sql, sql`ci.status`)],
      ['status_updated_at', toJson(sql, apiTime(sql, 'ci.status_updated_at'))],
      ['last_seen', toJson(sql, apiTime(sql, 'ls.last_seen'))],
      ['created_at', toJson(sql, apiTime(sql, 'ci.created_at'))],
      ['updated_at', toJson(sql, apiTime(sql, 'ci.updated_at'))],
      ['raw_data', toJson(sql, sql`ci.raw_data`)],
      ['type_data', toJson(sql, typeDataWithMetrics(sql))],
      [
        'source',
        jsonObject(sql, [
          ['id', toJson(sql, sql`s.id`)],
          ['name', toJson(sql, sql`s.name`)],
          ['collector_type', toJson(sql, sql`c.collector_type`)],
        ]),
      ],
      ['scope_id', toJson(sql, sql`ci.scope_id`)],
      // the real thing this CI observes, when identification linked it to one (src/inventory/identities/)
      [
        'identity',
        sql`case when io.identity_id is null then 'null' else ${jsonObject(sql, [
          ['id', toJson(sql, sql`io.identity_id`)],
          ['kind', toJson(sql, sql`io.kind`)],
          ['role', toJson(sql, sql`io.role`)],
        ])} end`,
      ],
      // every identity it observes: a database server is one itself and observes the host it runs on
      [
        'identities',
        sql`coalesce((select json_agg(json_build_object('id', o.identity_id, 'kind', o.kind, 'role', o.role)
          order by o.kind = 'host' desc, o.kind)::text from identity_observations o where o.ci_id = ci.ci_id), '[]')`,
      ],
    ])} as detail
    from configuration_items ci
    join ci_last_seen ls on ls.ci_id = ci.ci_id
    join sources s on s.id = ci.source_id
    join collectors c on c.id = s.collector_id
    left join identity_observations io on io.ci_id = ci.ci_id and io.kind = 'host'
    where ci.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('ci'))}`;
  return row?.detail;
}

/** A source as a CI's detail names it. */
export async function findSource(
  sql: Sql,
  sourceId: string,
): Promise<{ id: number; name: string; collector_type: string } | undefined> {
  const [row] = await sql<{ id: number; name: string; collector_type: string }[]>`
    select s.id::int as id, s.name, c.collector_type from sources s join collectors c on c.id = s.collector_id where s.id = ${sourceId}`;
  return row;
}

/** Whether the CI exists and lies inside the principal's data scopes (no row is loaded). */
export async function isCiVisible(sql: Sql, principal: Principal, ciId: string): Promise<boolean> {
  const rows =
    await sql`select 1 from configuration_items ci where ci.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('ci'))}`;
  return rows.length > 0;
}
