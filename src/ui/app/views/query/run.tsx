import { useEffect } from 'preact/hooks';
import type { EditorProblem } from '../../components/query-editor';
import { useCursorWalk } from '../../components/cursor-walk';
import { Empty, ErrorBox, Loading, useAction } from '../../components/states';
import { api, download } from '../../lib/api';
import type { QueryAnswer, QueryRow } from '../../lib/api-shapes';
import { count, dateTime } from '../../lib/format';
import { setParams } from '../../lib/router';
import { GroupsChart } from './groups-chart';
import { PathGraph } from './path-graph';
import { Plan } from './plan';
import { hops, serverProblem } from './problem';
import { RowsTable } from './rows-table';
import { bodyOf, type Asked } from './asked';

interface AnswerPage {
  items: QueryRow[];
  has_more: boolean;
  next_cursor: string | null;
  answer: QueryAnswer;
}

const pageOf = (answer: QueryAnswer): AnswerPage => ({
  items: answer.kind === 'rows' ? answer.items : [],
  has_more: answer.kind === 'rows' && answer.next_cursor !== null,
  next_cursor: answer.kind === 'rows' ? answer.next_cursor : null,
  answer,
});

/** The answer's line above it: how much, how fast, at which moment, and what lies out of sight. */
function Summary({ answer, shown, asked }: { answer: QueryAnswer; shown: number; asked: Asked }) {
  if (answer.kind === 'explain') return null;
  const what =
    answer.kind === 'rows'
      ? `${count(shown)} item${shown === 1 ? '' : 's'}${answer.next_cursor ? ' so far' : ''}`
      : `${count(answer.groups.length)} group${answer.groups.length === 1 ? '' : 's'}${answer.truncated ? ' (the largest 1 000)' : ''}`;
  return (
    <p class="meta" role="status">
      {what} in {count(answer.took_ms)} ms{answer.as_of ? `, as of ${dateTime(answer.as_of)}` : ''}
      {asked.compareTo ? `, not matching at ${dateTime(asked.compareTo)}` : ''}.
      {answer.hidden > 0 ? (
        <strong class="query-hidden">
          {' '}
          {count(answer.hidden)} item{answer.hidden === 1 ? '' : 's'} reached lie outside the data you may see.
        </strong>
      ) : null}
    </p>
  );
}

function CsvButton({ asked }: { asked: Asked }) {
  const action = useAction();
  const save = () =>
    void action.run(() =>
      download('/api/v1/query', { method: 'POST', body: bodyOf(asked), accept: 'text/csv' }, 'query.csv'),
    );
  return (
    <>
      <button type="button" onClick={save} disabled={action.busy}>
        {action.busy ? 'Exporting…' : 'Download CSV'}
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

/** Table or graph, for a query whose answer is CIs reached along relationships. */
function ShownAs({ shown }: { shown: 'table' | 'graph' }) {
  return (
    <div role="tablist" aria-label="Show the answer as" class="tabs">
      {(['table', 'graph'] as const).map((name) => (
        <button
          key={name}
          type="button"
          role="tab"
          aria-selected={shown === name}
          onClick={() => setParams({ show: name === 'table' ? undefined : name }, { replace: true })}
        >
          {name === 'table' ? 'Table' : 'Graph'}
        </button>
      ))}
    </div>
  );
}

type Walk = ReturnType<typeof useCursorWalk<QueryRow, AnswerPage>>;

function Rows({ walk, asked, params }: { walk: Walk; asked: Asked; params: URLSearchParams }) {
  const answer = walk.first!.answer as Extract<QueryAnswer, { kind: 'rows' }>;
  const walks = hops(asked.q) > 0;
  const shown = walks && params.get('show') === 'graph' ? 'graph' : 'table';
  if (walk.items.length === 0) return <Empty>Nothing matches this query.</Empty>;
  return (
    <>
      {walks ? <ShownAs shown={shown} /> : null}
      {shown === 'graph' ? (
        <PathGraph asked={asked} />
      ) : (
        <RowsTable columns={answer.columns} rows={walk.items} asOf={asked.asOf} />
      )}
      {shown === 'table' && walk.next ? (
        <button type="button" class="more" onClick={walk.more} disabled={walk.busy}>
          {walk.busy ? 'Loading…' : 'More'}
        </button>
      ) : null}
    </>
  );
}

/**
 * Runs the query of the URL and shows its answer: CIs as a table (more pages by cursor) or, for a
 * query that hops, as a graph; groups as bars; the plan beside it; a problem in the text goes to
 * the editor (`onProblem`) to be marked there.
 */
export function QueryRun(
  props: Asked & { params: URLSearchParams; onProblem: (p: EditorProblem | undefined) => void },
) {
  const { params, onProblem, ...asked } = props;
  const walk = useCursorWalk<QueryRow, AnswerPage>(JSON.stringify(asked), (cursor, signal) =>
    api<QueryAnswer>('/api/v1/query', { method: 'POST', body: bodyOf(asked, cursor ? { cursor } : {}), signal }).then(
      pageOf,
    ),
  );
  const problem = serverProblem(walk.error);
  useEffect(() => onProblem(problem), [problem?.offset, problem?.message]);
  const answer = walk.first?.answer;
  return (
    <div class="query-results">
      <div class="query-answer" aria-busy={walk.busy}>
        {walk.error && !answer ? <ErrorBox error={walk.error} /> : null}
        {!answer && !walk.error ? <Loading what="the answer" /> : null}
        {answer ? (
          <>
            <div class="toolbar">
              <Summary answer={answer} shown={walk.items.length} asked={asked} />
              <CsvButton asked={asked} />
            </div>
            {answer.kind === 'aggregate' ? (
              <GroupsChart answer={answer} />
            ) : (
              <Rows walk={walk} asked={asked} params={params} />
            )}
            {walk.error ? <ErrorBox error={walk.error} /> : null}
          </>
        ) : null}
      </div>
      <Plan asked={asked} />
    </div>
  );
}
