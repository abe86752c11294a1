import { useEffect, useMemo, useState } from 'preact/hooks';
import { QueryEditor, type EditorProblem } from '../../components/query-editor';
import { useQueryCompletion } from '../../components/query-vocabulary';
import { SavedViews } from '../../components/saved-views';
import { TimeInput } from '../../components/time-input';
import { Link, setParams } from '../../lib/router';
import type { ViewProps } from '../view';
import { QueryRun } from './run';
import { localProblem } from './problem';

const EXAMPLES: readonly (readonly [query: string, what: string])[] = [
  ['ci_type = k8s.pod and namespace = shop', 'the pods of a namespace'],
  ['ci_type = k8s.pod | count by namespace, status', 'pods counted by namespace and status'],
  [
    'ci_type = k8s.deployment and name = checkout -[manages]-> * -[manages]-> ci_type = k8s.pod -[runs_on]-> *',
    "the nodes a deployment's pods run on",
  ],
  ['changed raw_data.spec since now-24h | with changes', 'what changed its spec in the last day'],
];

function Examples() {
  return (
    <div class="query-examples">
      <h2>Examples</h2>
      <ul>
        {EXAMPLES.map(([query, what]) => (
          <li key={query}>
            <Link href={`/query?q=${encodeURIComponent(query)}`}>
              <code>{query}</code>
            </Link>{' '}
            <span class="meta">{what}</span>
          </li>
        ))}
      </ul>
      <p class="meta">
        The language: matches on fields and history, hops along relationships, pipes that sort, pick columns and
        aggregate (docs/query-language.md).
      </p>
    </div>
  );
}

/** As of and compare to, each a moment in the URL; the query runs again when either moves. */
function Moments({ asOf, compareTo }: { asOf: string | undefined; compareTo: string | undefined }) {
  return (
    <>
      <label>
        As of <TimeInput seconds value={asOf} onValue={(iso) => setParams({ as_of: iso })} />
      </label>
      <label>
        Compare to <TimeInput seconds value={compareTo} onValue={(iso) => setParams({ compare_to: iso })} />
      </label>
    </>
  );
}

/**
 * The query console: the editor (coloured by the shared grammar, its problem marked, completion at
 * the cursor), the moments, and the answer of the query in the URL (`?q=…&as_of=…&compare_to=…`).
 */
export default function QueryView({ place }: ViewProps) {
  const { params } = place;
  const q = params.get('q') ?? '';
  const asOf = params.get('as_of') ?? undefined;
  const compareTo = params.get('compare_to') ?? undefined;
  const [draft, setDraft] = useState(q);
  const [runs, setRuns] = useState(0);
  const [fromServer, setFromServer] = useState<EditorProblem>();
  useEffect(() => setDraft(q), [q]);
  const typed = useMemo(() => localProblem(draft), [draft]);
  const complete = useQueryCompletion();
  const run = () => {
    if (draft.trim() === '') return;
    if (draft === q) setRuns((n) => n + 1);
    else setParams({ q: draft, show: undefined });
  };
  return (
    <section class="query-view">
      <h1>Query</h1>
      <SavedViews view="query" params={params} />
      <form
        class="query-form"
        onSubmit={(event) => {
          event.preventDefault();
          run();
        }}
      >
        <QueryEditor
          id="query-text"
          label="Query"
          value={draft}
          onValue={setDraft}
          onRun={run}
          problem={typed ?? (draft === q ? fromServer : undefined)}
          complete={complete}
        />
        <div class="toolbar">
          <Moments asOf={asOf} compareTo={compareTo} />
          <button type="submit" class="primary">
            Run
          </button>
          <span class="meta">Ctrl+Enter runs, Ctrl+Space completes</span>
        </div>
      </form>
      {q ? (
        <QueryRun key={`${runs}`} q={q} asOf={asOf} compareTo={compareTo} params={params} onProblem={setFromServer} />
      ) : (
        <Examples />
      )}
    </section>
  );
}
