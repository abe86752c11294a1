import type { Sql } from 'postgres';

export interface ReindexRun {
  id: string;
  alias: string;
  index_name: string;
  status: 'running' | 'completed' | 'failed';
  last_change_id: string;
  indexed: number;
  total: number;
  started_at: Date;
}

const columns = (sql: Sql) =>
  sql`id::text, alias, index_name, status, last_change_id::text, indexed::int, total::int, started_at`;

/** The reindex of `alias` in progress, if any: live indexing writes to its index too. */
export async function runningReindex(sql: Sql, alias: string): Promise<ReindexRun | undefined> {
  const [run] = await sql<
    ReindexRun[]
  >`select ${columns(sql)} from search_reindex where alias = ${alias} and status = 'running'`;
  return run;
}

/** Registers a new reindex; fails (unique index) when one is running for the alias already. */
export async function startReindexRun(sql: Sql, alias: string, indexName: string): Promise<ReindexRun> {
  const [run] = await sql<ReindexRun[]>`
    insert into search_reindex (alias, index_name, status) values (${alias}, ${indexName}, 'running') returning ${columns(sql)}`;
  return run!;
}

/** Records progress, so that an interrupted reindex can resume after the last batch done. */
export async function recordProgress(
  sql: Sql,
  id: string,
  lastChangeId: string,
  indexed: number,
  total: number,
): Promise<void> {
  await sql`update search_reindex set last_change_id = ${lastChangeId}, indexed = ${indexed}, total = ${total} where id = ${id}`;
}

export async function finishReindexRun(sql: Sql, id: string, status: 'completed' | 'failed'): Promise<void> {
  await sql`update search_reindex set status = ${status}, finished_at = now() where id = ${id}`;
}
