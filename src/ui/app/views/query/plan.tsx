import { useState } from 'preact/hooks';
import { Show, useLoad } from '../../components/states';
import { api } from '../../lib/api';
import type { QueryAnswer, QueryPlan } from '../../lib/api-shapes';
import { count } from '../../lib/format';
import { bodyOf, type Asked } from './asked';

const RATINGS: Record<QueryPlan['rating'], string> = {
  light: 'Light: read along indexes',
  moderate: 'Moderate',
  heavy: 'Heavy: reads much of a table',
};

/** Each read of the plan: the table, along which index or whole, the rows expected, and the condition. */
function Steps({ plan }: { plan: QueryPlan }) {
  return (
    <ol class="query-plan-steps" aria-label="Plan steps">
      {plan.steps.map((step, index) => (
        <li key={index}>
          <code>{step.table}</code> <span class={`badge access-${step.access}`}>{step.access}</span>{' '}
          {step.index ? <code>{step.index}</code> : <span class="meta">{step.node}</span>}
          <span class="meta">
            {' '}
            · about {count(step.estimated_rows)} row{step.estimated_rows === 1 ? '' : 's'}
          </span>
          {step.condition ? <div class="meta condition">{step.condition}</div> : null}
        </li>
      ))}
    </ol>
  );
}

function PlanBody({ plan }: { plan: QueryPlan }) {
  return (
    <>
      <p>
        <span class={`badge rating-${plan.rating}`}>{plan.rating}</span> {RATINGS[plan.rating]}
      </p>
      <p class="meta">
        About {count(plan.estimated_rows)} row{plan.estimated_rows === 1 ? '' : 's'} expected, cost{' '}
        {count(Math.round(plan.total_cost))}.
      </p>
      {plan.scans.length > 0 ? (
        <p class="meta">
          Read whole: {plan.scans.map((scan) => `${scan.table} (${count(scan.rows)} rows)`).join(', ')}.
        </p>
      ) : null}
      {plan.steps.length > 0 ? <Steps plan={plan} /> : null}
    </>
  );
}

/**
 * The query's plan (`explain`), asked when opened: the rating, and each table read along an index
 * or whole, with the rows the planner expects.
 */
export function Plan({ asked }: { asked: Asked }) {
  const [open, setOpen] = useState(false);
  const loaded = useLoad(open ? JSON.stringify(asked) : null, (signal) =>
    api<QueryAnswer>('/api/v1/query', { method: 'POST', body: bodyOf(asked, { explain: true }), signal }),
  );
  return (
    <details class="query-plan" onToggle={(event) => setOpen((event.currentTarget as HTMLDetailsElement).open)}>
      <summary>Plan</summary>
      {open ? (
        <Show loaded={loaded} what="the plan">
          {(answer) => (answer.kind === 'explain' ? <PlanBody plan={answer.plan} /> : null)}
        </Show>
      ) : null}
    </details>
  );
}
