/**
 * Statements of one transaction sent without waiting for each answer (a pipeline): postgres.js
 * runs a transaction's queries in the order they are queued, so the process can build the next
 * statement while the database runs the one before.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * A statement whose answer is awaited later, after others are sent: its failure before then is
 * not an unhandled rejection (whoever awaits it still gets the error).
 */
export function queued<T>(statement: Promise<T>): Promise<T> {
  statement.catch(() => {});
  return statement;
}

/**
 * Resolves once the statements queued so far are written to the socket. The driver queues a
 * statement a microtask after `.execute()` and writes a short one at the next turn of the event
 * loop: the microtasks go first, so that its turn comes before the caller's.
 */
export async function onTheWire(): Promise<void> {
  await null;
  await nextTurn();
}

/**
 * JSON for a statement of a pipeline, bound as `${jsonText(value)}::text::jsonb`: serialised before
 * the statement is queued, so a value that cannot be serialised throws in the caller. postgres.js
 * serialises `sql.json` values while it writes the statement, and a failure there, with other
 * statements in flight, leaves it pairing their answers with the wrong statements (the
 * transaction then never ends).
 */
export const jsonText = (value: unknown): string => JSON.stringify(value);
