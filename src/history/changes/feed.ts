import { setTimeout as sleep } from 'node:timers/promises';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { validationFailed } from '../../platform/errors.js';
import type { Aside } from '../../platform/http/load.js';
import { feedEnd, scanFeed, type FeedPlace } from '../records/feed.js';
import type { ChangeRow, HistoryFilter } from '../records/store.js';
import { parseFilters } from '../../platform/query/filters.js';
import { parseQuery } from '../../platform/query/text-query.js';
import { CHANGE_FILTERS, type FeedQuery } from './schema.js';

/** How often a waiting read looks again. */
const POLL_MS = 200;
/** Records scanned per read, per record asked for: how far a read looks past records it leaves out. */
const SCAN_FACTOR = 5;
const MIN_SCAN = 500;

const CURSOR = /^(\d{1,19})\.(\d{1,19})$/;
const MAX_BIGINT = 9223372036854775807n;

/** A feed cursor is its place, `<position>.<record id>`: nothing in it is secret, and every read applies the reader's scopes. */
export const feedCursor = (place: FeedPlace): string => `${place.position}.${place.id}`;

function placeOf(after: string | undefined): FeedPlace | 'now' {
  if (after === undefined) return { position: '0', id: '0' };
  if (after === 'now') return 'now';
  const match = CURSOR.exec(after);
  if (!match || BigInt(match[1]!) > MAX_BIGINT || BigInt(match[2]!) > MAX_BIGINT)
    throw validationFailed([
      { field: 'after', location: 'query', message: 'must be a next_cursor of the feed or `now`' },
    ]);
  return { position: match[1]!, id: match[2]! };
}

export function feedCriteria(query: Pick<FeedQuery, 'filter' | 'search'>): HistoryFilter {
  return {
    filters: parseFilters(query.filter, CHANGE_FILTERS),
    search: query.search === undefined ? undefined : parseQuery(query.search, 'search'),
    from: undefined,
    until: undefined,
    untilExclusive: false,
  };
}

export interface FeedRead {
  items: ChangeRow[];
  next: FeedPlace;
  caughtUp: boolean;
}

/**
 * The change records after a place in commit order (sql/0025), those the principal may see and the
 * criteria select, at most `limit`. With `wait`, a read that finds nothing looks again until a
 * record arrives, the wait ends or `signal` aborts (the client went away); it waits between its
 * reads through `aside` (outside the in-flight count of the load shedder).
 */
export async function readFeed(
  app: AppContext,
  principal: Principal,
  query: FeedQuery,
  signal?: AbortSignal,
  aside: Aside = (waiting) => waiting(),
): Promise<FeedRead> {
  const criteria = feedCriteria(query);
  const start = placeOf(query.after);
  let place = start === 'now' ? await feedEnd(app.sql) : start;
  const scan = Math.max(MIN_SCAN, SCAN_FACTOR * query.limit);
  const deadline = Date.now() + query.wait * 1000;
  for (;;) {
    const entries = await scanFeed(app.sql, principal, criteria, place, scan);
    const items: ChangeRow[] = [];
    for (const entry of entries) {
      place = entry.place;
      if (entry.record) items.push(entry.record);
      if (items.length === query.limit) break;
    }
    const caughtUp =
      entries.length < scan && (items.length < query.limit || place === entries[entries.length - 1]?.place);
    if (items.length > 0 || Date.now() >= deadline || signal?.aborted) return { items, next: place, caughtUp };
    // a full scan that matched nothing goes on at once; at the end of the feed, wait for more
    if (caughtUp)
      await aside(() =>
        sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())), undefined, { signal }).catch(() => undefined),
      );
  }
}
