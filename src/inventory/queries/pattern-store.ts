import type { Queryable } from '../../platform/db/database.js';

/** PostgreSQL's objection to a regular expression (`matches`), or undefined when it reads it. */
export async function patternObjection(sql: Queryable, pattern: string): Promise<string | undefined> {
  try {
    await sql`select '' ~ ${pattern}::text as matched`;
    return undefined;
  } catch (error) {
    if ((error as { code?: string }).code === '2201B') return (error as Error).message;
    throw error;
  }
}
