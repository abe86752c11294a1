import type { AppContext } from '../../context.js';
import type { Principal } from '../../platform/auth/principal.js';
import { unprocessable, validationFailed } from '../../platform/errors.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import { isExactTime } from '../../platform/query/exact-time.js';
import { foldWindowOf } from '../records/folds.js';
import { rollUp, type TimelineEntry } from './rollup.js';
import { ownedRecords, type OwnedRecord } from './rollup-store.js';

/** The window a rolled-up read covers when it names none: the week up to its end. */
export const ROLLUP_DEFAULT_MS = 7 * 86_400_000;
/** The most records one rolled-up read takes; a busier window is a 422 to narrow. */
export const ROLLUP_RECORDS = 50_000;

export interface TimelineQuery {
  limit: number;
  /** Without a cursor: entries to skip. */
  offset?: number;
  cursor?: string;
  fold: boolean;
  include_ignored: boolean;
  start_date?: string;
  end_date?: string;
}

export interface TimelinePage {
  /** Exact records (fold=false) or lines (fold=true), newest first. */
  records: OwnedRecord[];
  entries: TimelineEntry[];
  total: number;
  hasMore: boolean;
  nextCursor: string | null;
}

type Key = [at: string, id: string, from: string, until: string];

function keyOf(raw: unknown[]): Key {
  const [at, id, from, until] = raw;
  if (raw.length !== 4 || !isExactTime(at) || typeof id !== 'string' || !/^\d{1,19}$/.test(id))
    throw unprocessable('Malformed cursor');
  if (
    typeof from !== 'string' ||
    typeof until !== 'string' ||
    Number.isNaN(Date.parse(from)) ||
    Number.isNaN(Date.parse(until))
  )
    throw unprocessable('Malformed cursor');
  return [at, id, from, until];
}

/** The read's window: as asked, or the week up to now; a walk keeps the one its first page had. */
function windowOf(app: AppContext, query: TimelineQuery, cursor: Key | undefined): { from: string; until: string } {
  if (cursor) return { from: cursor[2], until: cursor[3] };
  const until = query.end_date ? new Date(Date.parse(query.end_date)) : app.now();
  const from = query.start_date
    ? new Date(Date.parse(query.start_date))
    : new Date(until.getTime() - ROLLUP_DEFAULT_MS);
  if (!(until > from))
    throw validationFailed([{ field: 'end_date', location: 'query', message: 'must be after start_date' }]);
  return { from: from.toISOString(), until: until.toISOString() };
}

const before = (at: string, id: string, key: Key | undefined) =>
  !key || at < key[0] || (at === key[0] && BigInt(id) < BigInt(key[1]));

/**
 * The timeline of `owners` and of what they owned at each moment (ownedRecords), exact or folded
 * into lines (rollUp), one page of it, newest first. `scope` binds the cursor to the read.
 */
export async function rolledUpTimeline(
  app: AppContext,
  principal: Principal,
  owners: readonly string[],
  query: TimelineQuery,
  scope: string,
): Promise<TimelinePage> {
  const binding: CursorBinding = {
    tenantId: principal.tenantId,
    reader: principal,
    scope: `${scope}:rollup`,
    sort: null,
    filters: { fold: query.fold, include_ignored: query.include_ignored, owners: [...owners].sort().join(',') },
  };
  const cursor = query.cursor ? keyOf(decodeCursor(app.config.secret, query.cursor, binding).key) : undefined;
  const window = windowOf(app, query, cursor);
  const records = await ownedRecords(app.sql, principal, owners, {
    ...window,
    ignored: query.include_ignored,
    limit: ROLLUP_RECORDS + 1,
  });
  if (records.length > ROLLUP_RECORDS)
    throw unprocessable(
      `More than ${ROLLUP_RECORDS} records lie in that window: narrow it with start_date and end_date`,
      {
        field: 'start_date',
        limit: ROLLUP_RECORDS,
      },
    );
  // one page of records or lines, newest first, each placed by its (lead) record
  const pageOf = <T>(items: T[], placeOf: (item: T) => { position_at: string; id: string }) => {
    const rest = items
      .filter((item) => before(placeOf(item).position_at, placeOf(item).id, cursor))
      .slice(cursor ? 0 : (query.offset ?? 0));
    const page = rest.slice(0, query.limit);
    const last = page.at(-1);
    const hasMore = rest.length > query.limit;
    const place = last && placeOf(last);
    const nextCursor =
      hasMore && place
        ? encodeCursor(app.config.secret, binding, [place.position_at, place.id, window.from, window.until])
        : null;
    return { page, total: items.length, hasMore, nextCursor };
  };
  if (!query.fold) {
    const { page, ...rest } = pageOf(records, (record) => record);
    return { records: page, entries: [], ...rest };
  }
  const lines = rollUp(records, (await foldWindowOf(app.sql, principal.tenantId)) * 1000).sort(
    (a, b) => b.lead.position_at.localeCompare(a.lead.position_at) || Number(BigInt(b.lead.id) - BigInt(a.lead.id)),
  );
  const { page, ...rest } = pageOf(lines, (line) => line.lead);
  return { records: [], entries: page, ...rest };
}
