import type { SearchClause } from '../auth/scope.js';
import type { ParsedFilter } from './filters.js';

/** Characters with a meaning in a wildcard pattern, escaped so that values match literally. */
const escapeWildcard = (value: string): string => value.replace(/[\\*?]/g, (c) => `\\${c}`);

const not = (clause: SearchClause): SearchClause => ({ bool: { must_not: [clause] } });

/**
 * A parsed filter as an OpenSearch clause over the document field of the same name, with the
 * semantics of the SQL compiler: `ne`/`nin` also match documents without the field, array fields
 * (changed_fields) match when any element does, `like` is case-sensitive and `ilike` not.
 */
function clause(filter: ParsedFilter): SearchClause {
  if (filter.target !== 'column') throw new Error(`filter ${filter.raw} has no OpenSearch field`);
  const field = filter.def.column.slice(filter.def.column.indexOf('.') + 1);
  const value = filter.value ?? '';
  const list = value.split(',');
  switch (filter.op) {
    case 'eq':
      return filter.def.kind === 'timestamp'
        ? { range: { [field]: { gte: value, lte: value } } }
        : { term: { [field]: value } };
    case 'ne':
      return not(
        filter.def.kind === 'timestamp'
          ? { range: { [field]: { gte: value, lte: value } } }
          : { term: { [field]: value } },
      );
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { range: { [field]: { [filter.op]: value } } };
    case 'like':
      return { wildcard: { [field]: { value: `*${escapeWildcard(value)}*` } } };
    case 'ilike':
      return { wildcard: { [field]: { value: `*${escapeWildcard(value)}*`, case_insensitive: true } } };
    case 'startswith':
      return { prefix: { [field]: { value } } };
    case 'in':
      return filter.def.kind === 'timestamp'
        ? { bool: { should: list.map((v) => ({ range: { [field]: { gte: v, lte: v } } })), minimum_should_match: 1 } }
        : { terms: { [field]: list } };
    case 'nin':
      return not(
        filter.def.kind === 'timestamp'
          ? { bool: { should: list.map((v) => ({ range: { [field]: { gte: v, lte: v } } })) } }
          : { terms: { [field]: list } },
      );
    case 'null':
      return not({ exists: { field } });
    case 'notnull':
      return { exists: { field } };
  }
}

/** Filter clauses for the `filter` of a bool query; values are data, never query syntax. */
export function compileOpenSearchFilters(filters: readonly ParsedFilter[]): SearchClause[] {
  return filters.map(clause);
}
