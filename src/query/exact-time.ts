import type { Sql } from 'postgres';
import type { Fragment } from '../auth/scope.js';

/**
 * A timestamp as a keyset position: PostgreSQL keeps microseconds, a JavaScript Date only
 * milliseconds, so positions travel as text at the database's own precision.
 */
export const EXACT_TIME_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"';

const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** Whether a value read back from a cursor is a position written with EXACT_TIME_FORMAT. */
export const isExactTime = (value: unknown): value is string => typeof value === 'string' && EXACT_TIME.test(value);

/** The column as text at microsecond precision, in UTC. */
export const exactTime = (sql: Sql, column: string): Fragment => sql`to_char(${sql(column)} at time zone 'UTC', ${EXACT_TIME_FORMAT})`;

/** An exact time (EXACT_TIME_FORMAT) as the API shows it (milliseconds, as Date#toISOString writes them), the rest cut as to_char's MS cuts it. */
export const apiTimeOf = (exact: string): string => `${exact.slice(0, 23)}Z`;

/** The API's form of a time (Date#toISOString's: milliseconds, UTC), written by the database, for JSON it writes itself. */
export const API_TIME_FORMAT = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';
