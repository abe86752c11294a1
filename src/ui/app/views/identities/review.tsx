import { useEffect, useState } from 'preact/hooks';
import { api, can, type Me } from '../../lib/api';
import type {
  ConflictPage,
  DecisionPage,
  IdentityConflict,
  IdentityDecision,
  NewIdentityDecision,
} from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { keepApartDecision, mergeDecision, sourceLabel } from '../../lib/identities';
import { Link } from '../../lib/router';
import { useCursorWalk } from '../../components/cursor-walk';
import { DataTable } from '../../components/data-table';
import { useSourceNames } from '../../components/source-names';
import { Empty, ErrorBox, Loading, Show, useAction, useLoad, type Action } from '../../components/states';

type Names = ReadonlyMap<number, string>;

const ACTIONS: Record<string, string> = { merge: 'Merged', keep_apart: 'Kept apart', pin: 'Pinned' };

/**
 * The review queue: the open conflicts, each explained with the groups it would have joined, to
 * merge or keep apart; and the recent decisions, to undo. Deciding needs configuration_items:write.
 */
export function ReviewQueue({ me, params }: { me: Me; params: URLSearchParams }) {
  const mayDecide = can(me, 'configuration_items:write');
  const [generation, setGeneration] = useState(0);
  const [message, setMessage] = useState<string>();
  const action = useAction();
  const names = useSourceNames();
  const decide = (body: NewIdentityDecision, done: string) =>
    void action.run(async () => {
      setMessage(undefined);
      await api<IdentityDecision>('/api/v1/identities/decisions', { method: 'POST', body });
      setMessage(done);
      setGeneration((n) => n + 1);
    });
  const undo = (decision: IdentityDecision) =>
    void action.run(async () => {
      setMessage(undefined);
      await api<IdentityDecision>(`/api/v1/identities/decisions/${decision.id}`, { method: 'DELETE' });
      setMessage('Decision undone.');
      setGeneration((n) => n + 1);
    });
  return (
    <section class="review" aria-labelledby="review-heading">
      <p class="meta">
        <Link href="/identities">Identities</Link> / review
      </p>
      <h1 id="review-heading">Review queue</h1>
      {message ? (
        <p class="notice" role="status">
          {message}
        </p>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
      <Conflicts
        generation={generation}
        focus={params.get('conflict') ?? undefined}
        names={names}
        decide={mayDecide ? decide : undefined}
        action={action}
      />
      <Decisions generation={generation} undo={mayDecide ? undo : undefined} action={action} />
    </section>
  );
}

function Conflicts(props: {
  generation: number;
  focus?: string;
  names: Names;
  decide?: (body: NewIdentityDecision, done: string) => void;
  action: Action;
}) {
  const { generation, focus, names, decide, action } = props;
  const walk = useCursorWalk<IdentityConflict>(String(generation), (cursor, signal) =>
    api<ConflictPage>('/api/v1/identities/conflicts', {
      query: cursor ? { status: 'open', cursor } : { status: 'open', limit: 50 },
      signal,
    }),
  );
  // a link from an identity names the conflict: brought into view once it is listed
  const focused = walk.items.some((conflict) => conflict.id === focus);
  useEffect(() => {
    if (focused) document.getElementById(`conflict-${focus}`)?.scrollIntoView({ block: 'start' });
  }, [focused, focus]);
  return (
    <section aria-labelledby="conflicts-heading">
      <h2 id="conflicts-heading">Open conflicts</h2>
      {walk.error ? <ErrorBox error={walk.error} /> : null}
      {walk.items.length === 0 && walk.busy ? <Loading what="conflicts" /> : null}
      {walk.items.length === 0 && !walk.busy && !walk.error ? <Empty>No open conflicts.</Empty> : null}
      {walk.items.map((conflict) => (
        <ConflictItem
          key={conflict.id}
          conflict={conflict}
          focused={conflict.id === focus}
          names={names}
          decide={decide}
          busy={action.busy}
        />
      ))}
      {walk.next ? (
        <button type="button" onClick={walk.more} disabled={walk.busy}>
          {walk.busy ? 'Loading…' : 'Load more conflicts'}
        </button>
      ) : null}
    </section>
  );
}

function ConflictItem(props: {
  conflict: IdentityConflict;
  focused: boolean;
  names: Names;
  decide?: (body: NewIdentityDecision, done: string) => void;
  busy: boolean;
}) {
  const { conflict, focused, names, decide, busy } = props;
  const heading = `conflict-${conflict.id}-heading`;
  return (
    <article
      id={`conflict-${conflict.id}`}
      class={`conflict${focused ? ' focused' : ''}`}
      aria-labelledby={heading}
      aria-current={focused ? 'true' : undefined}
    >
      <h3 id={heading}>
        {conflict.rule}: {conflict.shared_values.join(', ')}
      </h3>
      <p>{conflict.explanation}</p>
      <p class="meta">Raised {dateTime(conflict.raised_at)}</p>
      <ol class="conflict-groups" aria-label="Groups the rule would have joined">
        {conflict.groups.map((group, index) => (
          <li key={group[0]?.ci_id ?? index}>
            Group {index + 1}
            {group[0]?.identity_id ? (
              <>
                {' '}
                (<Link href={`/identities/${group[0].identity_id}`}>its identity</Link>)
              </>
            ) : null}
            <ul class="neighbours">
              {group.map((member) => (
                <li key={member.ci_id}>
                  <Link href={`/ci/${member.ci_id}`}>{member.name}</Link>{' '}
                  <span class="meta">
                    {member.ci_type} · {sourceLabel(names, member.source_id)}
                  </span>
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ol>
      {decide ? (
        <div class="actions">
          <button
            type="button"
            disabled={busy}
            onClick={() => decide(keepApartDecision(conflict), 'Kept apart: the conflict is settled.')}
          >
            Keep apart
          </button>
          <button
            type="button"
            class="primary"
            disabled={busy}
            onClick={() => decide(mergeDecision(conflict), 'Merged into one identity: the conflict is settled.')}
          >
            Merge
          </button>
        </div>
      ) : null}
    </article>
  );
}

/** Who made a decision, as the API names them. */
const byWhom = (who: IdentityDecision['made_by']) => who.name ?? who.kind;

function Decisions({
  generation,
  undo,
  action,
}: {
  generation: number;
  undo?: (decision: IdentityDecision) => void;
  action: Action;
}) {
  const loaded = useLoad(`decisions ${generation}`, (signal) =>
    api<DecisionPage>('/api/v1/identities/decisions', { query: { include_undone: true, limit: 20 }, signal }),
  );
  return (
    <section aria-labelledby="decisions-heading">
      <h2 id="decisions-heading">Recent decisions</h2>
      <Show loaded={loaded} what="decisions">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No decisions yet.</Empty>
          ) : (
            <DataTable
              label="Recent decisions"
              rows={page.items}
              rowKey={(decision) => decision.id}
              columns={[
                { header: 'When', cell: (decision) => dateTime(decision.made_at) },
                { header: 'Decision', cell: (decision) => ACTIONS[decision.action] ?? decision.action },
                {
                  header: 'CIs',
                  cell: (decision) => (
                    <span class="decision-cis">
                      {decision.ci_ids.map((ciId, index) => (
                        <span key={ciId}>
                          {index > 0 ? ', ' : ''}
                          <Link href={`/ci/${ciId}`}>{ciId.slice(0, 8)}</Link>
                        </span>
                      ))}
                      {decision.field ? ` · ${decision.field}` : ''}
                    </span>
                  ),
                },
                { header: 'By', cell: (decision) => byWhom(decision.made_by) },
                { header: 'Reason', cell: (decision) => decision.reason ?? '' },
                {
                  header: 'Undo',
                  cell: (decision) =>
                    decision.undone_at ? (
                      <span class="meta">
                        undone {dateTime(decision.undone_at)}
                        {decision.undone_by ? ` by ${byWhom(decision.undone_by)}` : ''}
                      </span>
                    ) : undo ? (
                      <button type="button" disabled={action.busy} onClick={() => undo(decision)}>
                        Undo
                      </button>
                    ) : (
                      ''
                    ),
                },
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}
