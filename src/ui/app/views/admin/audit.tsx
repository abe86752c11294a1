import { api, download } from '../../lib/api';
import type { AuditEvent, AuditPage } from '../../lib/api-shapes';
import { exportName } from '../../lib/csv';
import { dateTime } from '../../lib/format';
import { setParams } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { SelectField } from '../../components/fields';
import { Empty, ErrorBox, Show, useAction, useLoad } from '../../components/states';

const EVENT_TYPES = [
  'auth.succeeded',
  'auth.failed',
  'api_key.created',
  'api_key.revoked',
  'token.created',
  'token.revoked',
  'permission.denied',
  'credentials.revealed',
  'credentials.reveal_denied',
  'user.created',
  'user.deactivated',
  'user.reactivated',
  'user.promoted',
  'grant.changed',
  'membership.changed',
  'identity.decided',
  'identity.decision_undone',
  'identity.rules_changed',
  'quality.settings_changed',
  'quality.rule_created',
  'quality.rule_changed',
  'quality.rule_deleted',
];

export function Audit({ params }: { params: URLSearchParams }) {
  const query = {
    event_type: params.get('event_type') ?? undefined,
    outcome: params.get('outcome') ?? undefined,
    cursor: params.get('cursor') ?? undefined,
    limit: 100,
  };
  const loaded = useLoad(JSON.stringify(query), (signal) => api<AuditPage>('/api/v1/audit-events', { query, signal }));
  return (
    <section aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit log</h2>
      <AuditFilters eventType={query.event_type} outcome={query.outcome} />
      <Show loaded={loaded} what="audit events">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No events match.</Empty>
          ) : (
            <>
              <AuditTable events={page.items} />
              <AuditPager page={page} newer={Boolean(query.cursor)} />
            </>
          )
        }
      </Show>
    </section>
  );
}

/** Event type and outcome, kept in the URL; the CSV download takes the same filters and every page. */
function AuditFilters({ eventType, outcome }: { eventType?: string; outcome?: string }) {
  const action = useAction();
  const csv = () =>
    download(
      '/api/v1/audit-events',
      { accept: 'text/csv', query: { event_type: eventType, outcome } },
      exportName('audit'),
    );
  return (
    <>
      <div class="filter-row">
        <SelectField
          label="Event"
          value={eventType ?? ''}
          onValue={(value) => setParams({ event_type: value || undefined, cursor: undefined })}
          choices={[['', 'Any'], ...EVENT_TYPES]}
        />
        <SelectField
          label="Outcome"
          value={outcome ?? ''}
          onValue={(value) => setParams({ outcome: value || undefined, cursor: undefined })}
          choices={[['', 'Any'], 'success', 'failure']}
        />
        <button type="button" disabled={action.busy} onClick={() => void action.run(csv)}>
          Download CSV
        </button>
      </div>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

function AuditTable({ events }: { events: AuditEvent[] }) {
  return (
    <DataTable
      label="Audit events"
      rows={events}
      rowKey={(event) => event.id}
      columns={[
        { header: 'When', cell: (event) => dateTime(event.occurred_at) },
        { header: 'Event', cell: (event) => event.event_type },
        { header: 'Outcome', cell: (event) => event.outcome },
        { header: 'Actor', cell: (event) => event.actor.name ?? event.actor.kind },
        {
          header: 'Target',
          cell: (event) => (event.target ? `${event.target.type} ${event.target.name ?? event.target.id}` : '—'),
        },
        { header: 'Client', cell: (event) => event.client_address ?? '—' },
        {
          header: 'Details',
          class: 'value',
          cell: (event) => (Object.keys(event.details).length ? JSON.stringify(event.details) : ''),
        },
      ]}
    />
  );
}

/** Cursor paging: older pages by the cursor in the URL; a newer page is the history entry before. */
function AuditPager({ page, newer }: { page: AuditPage; newer: boolean }) {
  return (
    <nav class="pager" aria-label="Audit pages">
      {newer ? (
        <button type="button" onClick={() => history.back()}>
          ← Newer
        </button>
      ) : null}
      <button
        type="button"
        disabled={!page.has_more || !page.next_cursor}
        onClick={() => setParams({ cursor: page.next_cursor ?? undefined })}
      >
        Older →
      </button>
    </nav>
  );
}
