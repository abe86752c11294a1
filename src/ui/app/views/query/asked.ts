/** The query the URL asks, with its moments. */
export interface Asked {
  q: string;
  asOf: string | undefined;
  compareTo: string | undefined;
}

/** The request's body for a query, its moments and anything else (a cursor, `explain`). */
export const bodyOf = ({ q, asOf, compareTo }: Asked, extra: Record<string, unknown> = {}) => ({
  query: q,
  ...(asOf ? { as_of: asOf } : {}),
  ...(compareTo ? { compare_to: compareTo } : {}),
  ...extra,
});
