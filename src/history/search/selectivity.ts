import type { Sql } from 'postgres';
import { tokensOf, type ParsedQuery, type Term } from '../../platform/query/text-query.js';

/** A term's group counts as common when the statistics say it matches more than this share. */
export const COMMON_SHARE = 0.05;
const REFRESH_MS = 5 * 60_000;

interface Elements {
  loadedAt: number;
  frequencies: Map<string, number>;
  /** The least frequent element the statistics list: anything not listed is rarer. */
  floor: number;
}

/**
 * How often lexemes occur in the search documents, from the column statistics ANALYZE keeps
 * (pg_stats.most_common_elems), reloaded every few minutes. A GIN search of a very common prefix
 * collects the posting lists of every matching lexeme before it can intersect anything; knowing
 * which terms are common lets the query use the index for the rare ones and check the rest row by
 * row, or walk the history by time when every term is common.
 */
export class TermFrequencies {
  private elements: Elements | undefined;
  private loading: Promise<Elements> | undefined;

  constructor(private readonly sql: Sql) {}

  private async load(): Promise<Elements> {
    const [row] = await this.sql<{ elems: string[] | null; freqs: number[] | null }[]>`
      select s.most_common_elems::text::text[] as elems, s.most_common_elem_freqs::float8[] as freqs
      from pg_stats s join pg_class c on c.relname = s.tablename and c.relnamespace = current_schema()::regnamespace
      -- the partitioned table has figures only when analysed by hand (autovacuum analyses the
      -- months); otherwise the month with the most records stands for the whole
      where s.schemaname = current_schema() and s.attname = 'search_vector'
        and (s.tablename = 'change_records' or s.tablename in (
          select p.relname from pg_inherits i join pg_class p on p.oid = i.inhrelid where i.inhparent = 'change_records'::regclass))
        and s.most_common_elems is not null
      order by s.tablename = 'change_records' desc, c.reltuples desc
      limit 1`;
    const elems = row?.elems ?? [];
    const freqs = row?.freqs ?? [];
    const frequencies = new Map(elems.map((elem, i) => [elem, freqs[i] ?? 0]));
    return {
      loadedAt: Date.now(),
      frequencies,
      floor: elems.length > 0 ? Math.min(...freqs.slice(0, elems.length)) : 0,
    };
  }

  private async current(): Promise<Elements> {
    if (this.elements && Date.now() - this.elements.loadedAt < REFRESH_MS) return this.elements;
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    this.elements = await this.loading;
    return this.elements;
  }

  /** The estimated share of documents a term matches (exact lexeme, or every lexeme it prefixes). */
  private share(elements: Elements, term: Term): number {
    const { whole } = tokensOf(term.text);
    const prefix = !term.quoted && whole.length > 1;
    if (!prefix) return elements.frequencies.get(whole) ?? elements.floor;
    let share = 0;
    for (const [lexeme, frequency] of elements.frequencies) if (lexeme.startsWith(whole)) share += frequency;
    return Math.min(1, share || elements.floor);
  }

  /**
   * Splits the query's groups into those worth an index lookup and those to check on the rows the
   * index (or the time order) yields: excluded terms are never looked up, common groups only when
   * nothing rarer is there.
   */
  async split(query: ParsedQuery): Promise<{ indexed: ParsedQuery; checked: ParsedQuery }> {
    const elements = await this.current();
    const indexed: ParsedQuery = [];
    const checked: ParsedQuery = [];
    for (const group of query) {
      const negated = group.every((term) => term.negated);
      const share = group.reduce((sum, term) => sum + this.share(elements, term), 0);
      if (negated || group.some((term) => term.negated) || share > COMMON_SHARE) checked.push(group);
      else indexed.push(group);
    }
    return { indexed, checked };
  }
}
