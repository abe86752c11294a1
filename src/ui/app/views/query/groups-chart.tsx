import type { QueryAggregate } from '../../lib/api-shapes';
import { count } from '../../lib/format';

type Group = QueryAggregate['groups'][number];

/** A group's name: its key's values in the order of `by`, a missing one as "(none)". */
const groupName = (group: Group, by: readonly string[]) => by.map((field) => group.key[field] ?? '(none)').join(' · ');

/** What a bar measures: the count, or the aggregate's value (min, max, sum, avg). */
const measure = (answer: QueryAggregate, group: Group) => (answer.fn === 'count' ? group.count : (group.value ?? 0));

const figure = (value: number) =>
  Number.isInteger(value) ? count(value) : value.toLocaleString('en', { maximumFractionDigits: 3 });

/**
 * An aggregate's groups as horizontal bars (the statistics' style), largest first as the server
 * sorts them; a plain `| count` as one figure. Each bar says its group and value in text, so the
 * list reads the same without the bars.
 */
export function GroupsChart({ answer }: { answer: QueryAggregate }) {
  const what = answer.fn === 'count' ? 'count' : `${answer.fn}(${answer.field ?? ''})`;
  if (answer.by.length === 0) {
    const only = answer.groups[0];
    return (
      <div class="tiles">
        <div class="tile">
          <span class="tile-value">{only ? figure(measure(answer, only)) : '0'}</span>
          <span class="tile-label">{what}</span>
        </div>
      </div>
    );
  }
  const top = Math.max(1, ...answer.groups.map((group) => Math.abs(measure(answer, group))));
  const label = `${what} by ${answer.by.join(', ')}`;
  return (
    <figure class="query-chart">
      <figcaption>
        <code>{label}</code>
      </figcaption>
      <ul class="top-types query-groups" aria-label={label}>
        {answer.groups.map((group) => {
          const value = measure(answer, group);
          return (
            <li key={JSON.stringify(group.key)}>
              <span class="group-name">{groupName(group, answer.by)}</span>
              <span class="bar-track" aria-hidden="true">
                <span class="bar-fill" style={{ width: `${(Math.abs(value) / top) * 100}%` }} />
              </span>
              <span class="value">
                {figure(value)}
                {answer.fn !== 'count' ? <span class="meta"> ({count(group.count)})</span> : null}
              </span>
            </li>
          );
        })}
      </ul>
    </figure>
  );
}
