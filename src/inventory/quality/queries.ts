import type { Measure, QualitySettings } from './settings.js';
import { staleAfterMinutes } from './settings.js';
import type { SourceList } from './upkeep-store.js';
import type { RuleRow } from './store.js';

/** A value as the query language reads it back: always quoted. */
const quoted = (value: string) => `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;

const any = (parts: readonly string[]) => (parts.length === 1 ? parts[0]! : parts.map((p) => `(${p})`).join(' or '));

interface Known {
  sources: readonly SourceList[];
  late: ReadonlySet<string>;
  rules: readonly RuleRow[];
  now: Date;
}

/**
 * The query-language query that answers the CIs failing a measure under the filters (for the
 * Query view), or null where the language cannot say it: orphans and duplicates depend on
 * relationships and identities no match reads. Staleness and freshness are read at this moment.
 */
export function failingQuery(
  measure: Measure,
  settings: QualitySettings,
  filters: { ci_type?: string; source_id?: string; owner?: string; rule_id?: string },
  known: Known,
): string | null {
  const narrowing = [
    filters.ci_type === undefined ? undefined : `ci_type = ${quoted(filters.ci_type)}`,
    filters.source_id === undefined ? undefined : `source_id = ${filters.source_id}`,
    filters.owner === undefined ? undefined : `${settings.owner_path} = ${quoted(filters.owner)}`,
  ].filter((part): part is string => part !== undefined);
  const failing = failingMatch(measure, settings, filters, known);
  if (failing === null) return null;
  return [...narrowing, failing]
    .map((part, _, all) => (all.length > 1 && / or /.test(part) ? `(${part})` : part))
    .join(' and ');
}

function failingMatch(
  measure: Measure,
  settings: QualitySettings,
  filters: { ci_type?: string; rule_id?: string },
  known: Known,
): string | null {
  switch (measure) {
    case 'completeness': {
      const types = Object.entries(settings.completeness).filter(
        ([type, paths]) => paths.required.length > 0 && (filters.ci_type === undefined || filters.ci_type === type),
      );
      if (types.length === 0) return null;
      return any(
        types.map(
          ([type, paths]) =>
            `ci_type = ${quoted(type)} and (${paths.required.map((p) => `${p} not exists`).join(' or ')})`,
        ),
      );
    }
    case 'staleness': {
      const at = (minutes: number) => new Date(known.now.getTime() - minutes * 60_000).toISOString();
      const types = Object.keys(settings.stale_after_minutes.by_type);
      const others =
        `last_seen < ${at(settings.stale_after_minutes.default)}` +
        (types.length > 0 ? ` and ci_type not in (${types.map(quoted).join(', ')})` : '');
      return any([
        ...types.map((type) => `ci_type = ${quoted(type)} and last_seen < ${at(staleAfterMinutes(settings, type))}`),
        others,
      ]);
    }
    case 'freshness': {
      const parts = known.sources.flatMap((source) =>
        known.late.has(source.source_id)
          ? [`source_id = ${source.source_id}`]
          : source.listed_at
            ? [`source_id = ${source.source_id} and last_seen < ${new Date(source.listed_at).toISOString()}`]
            : [],
      );
      return parts.length > 0 ? any(parts) : null;
    }
    case 'rules': {
      const rules = known.rules.filter((rule) => filters.rule_id === undefined || rule.id === filters.rule_id);
      if (rules.length === 0) return null;
      return any(rules.map((rule) => `(${rule.applies_to}) and not (${rule.requires})`));
    }
    default:
      return null;
  }
}
