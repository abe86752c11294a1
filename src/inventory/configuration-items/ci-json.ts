import type { Sql } from 'postgres';
import type { Fragment } from '../../platform/auth/scope.js';
import { API_TIME_FORMAT } from '../../platform/query/exact-time.js';

/* CIs written as JSON text by the database, in the API's shapes: raw_data goes out as stored. */

/** A time column as the API writes times, by the database. */
export const apiTime = (sql: Sql, column: string) =>
  sql`to_char(${sql(column)} at time zone 'UTC', ${API_TIME_FORMAT})`;

/** A value as JSON text written by the database (`null` for SQL null); jsonb as stored. */
export const toJson = (sql: Sql, value: Fragment): Fragment => sql`coalesce(to_json(${value})::text, 'null')`;

/**
 * A JSON object of members already written as JSON text, in this order, with nothing between a
 * key and its colon: json_build_object writes `{"ci_id" : …, "name" : …}`, which every client
 * reads but nobody expects to see. The keys are this module's own constants.
 */
export function jsonObject(sql: Sql, members: [string, Fragment][]): Fragment {
  const written = members.reduce<Fragment>(
    (text, [key, value], i) =>
      sql`${text} || ${sql.unsafe(`'${i === 0 ? '{' : ','}${JSON.stringify(key)}:'`)} || ${value}`,
    sql`''`,
  );
  return sql`(${written} || '}')` as Fragment;
}

/**
 * A page's rows as list items (presentListedCi's shape), each written as JSON text by the database:
 * raw_data as stored, times in the API's form. The page's order is kept by its position and id.
 */
export function listedCisJson(sql: Sql, page: Fragment, sortOrder: 'asc' | 'desc') {
  const direction = sortOrder === 'asc' ? sql`asc` : sql`desc`;
  return sql<{ ci_id: string; position: string | null; item: string }[]>`
    select p.ci_id, p.position, ${jsonObject(sql, [
      ['ci_id', toJson(sql, sql`p.ci_id`)],
      ['name', toJson(sql, sql`p.name`)],
      ['namespace', toJson(sql, sql`p.namespace`)],
      ['ci_type', toJson(sql, sql`p.ci_type`)],
      ['status', toJson(sql, sql`p.status`)],
      ['status_updated_at', toJson(sql, apiTime(sql, 'p.status_updated_at'))],
      ['last_seen', toJson(sql, apiTime(sql, 'p.last_seen'))],
      ['created_at', toJson(sql, apiTime(sql, 'p.created_at'))],
      ['updated_at', toJson(sql, apiTime(sql, 'p.updated_at'))],
      ['raw_data', toJson(sql, sql`p.raw_data`)],
      ['source_id', toJson(sql, sql`p.source_id::bigint`)],
      ['scope_id', toJson(sql, sql`p.scope_id`)],
    ])} as item
    from (${page}) p
    order by p.position ${direction}, p.ci_id ${direction}`;
}

/** type_data as stored plus the metrics kept beside last_seen (`ls`), as collectors sent it. */
export const typeDataWithMetrics = (sql: Sql) =>
  sql`case when ls.metrics is null then ci.type_data else ci.type_data || jsonb_build_object('metrics', ls.metrics) end`;
