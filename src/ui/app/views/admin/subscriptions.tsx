import { useState } from 'preact/hooks';
import { api, can, type Me } from '../../lib/api';
import type {
  Answer,
  CreatedSubscription,
  Subscription,
  SubscriptionDelivery,
  SubscriptionTestResult,
} from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { Link } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { FilterBuilder } from '../../components/filter-builder';
import { SelectField, TextField } from '../../components/fields';
import { Empty, ErrorBox, Secret, Show, useAction, useLoad } from '../../components/states';
import { CreateForm, RevokeButton } from './controls';

/** The fields of the change history a subscription filters on, as `GET /changes` takes them. */
const CHANGE_FIELDS = ['change_type', 'ci_type', 'ci_name', 'changed_field', 'ci_id', 'changed_at'] as const;
const SINKS = [
  ['webhook', 'Webhook (HTTP POST)'],
  ['nats', 'NATS JetStream subject'],
] as const;

/** Change subscriptions: listed with their state, created with the signing secret shown once, tested, deleted. */
export function Subscriptions({ me }: { me: Me }) {
  const loaded = useLoad('subscriptions', (signal) =>
    api<Answer<'listSubscriptions'>>('/api/v1/subscriptions', { signal }),
  );
  const [secret, setSecret] = useState<string>();
  const mayWrite = can(me, 'subscriptions:write');
  return (
    <section aria-labelledby="subscriptions-heading">
      <h2 id="subscriptions-heading">Change subscriptions</h2>
      <p class="hint">
        Each subscription sends the changes its owner may read, as they commit, to a webhook (signed by Standard
        Webhooks) or a NATS subject. Its owner is whoever created or last changed it.
      </p>
      {secret ? <Secret value={secret} onDone={() => setSecret(undefined)} /> : null}
      {mayWrite ? (
        <SubscriptionForm
          created={(value) => {
            setSecret(value);
            loaded.reload();
          }}
        />
      ) : null}
      <Show loaded={loaded} what="subscriptions">
        {({ items }) =>
          items.length === 0 ? (
            <Empty>No subscriptions.</Empty>
          ) : (
            <SubscriptionsTable items={items} changed={mayWrite ? loaded.reload : undefined} />
          )
        }
      </Show>
    </section>
  );
}

function SubscriptionForm({ created }: { created: (secret: string) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<'webhook' | 'nats'>('webhook');
  const [url, setUrl] = useState('');
  const [subject, setSubject] = useState('');
  const [headerName, setHeaderName] = useState('');
  const [headerValue, setHeaderValue] = useState('');
  const [search, setSearch] = useState('');
  const [filters, setFilters] = useState<string[]>([]);
  const [qualityAlerts, setQualityAlerts] = useState(false);
  return (
    <div class="subscription-form">
      <h3>New subscription</h3>
      <FilterBuilder id="subscription-filters" fields={CHANGE_FIELDS} filters={filters} onChange={setFilters} />
      <CreateForm
        label="Create a subscription"
        submit="Create subscription"
        onSubmit={async () => {
          const sink =
            type === 'nats'
              ? { type, url, subject }
              : { type, url, ...(headerName ? { headers: { [headerName]: headerValue } } : {}) };
          const answer = await api<CreatedSubscription>('/api/v1/subscriptions', {
            method: 'POST',
            body: {
              name,
              sink,
              filter: filters,
              ...(search.trim() ? { search } : {}),
              ...(qualityAlerts ? { quality_alerts: true } : {}),
            },
          });
          created(answer.secret);
          setName('');
          setFilters([]);
        }}
      >
        <TextField label="Name" required value={name} onValue={setName} />
        <SelectField
          label="Sink"
          value={type}
          onValue={(value) => setType(value as 'webhook' | 'nats')}
          choices={SINKS}
        />
        <TextField
          label={type === 'nats' ? 'NATS server URL' : 'Webhook URL'}
          required
          value={url}
          onValue={setUrl}
          placeholder={type === 'nats' ? 'nats://host:4222' : 'https://…'}
        />
        {type === 'nats' ? <TextField label="Subject" required value={subject} onValue={setSubject} /> : null}
        {type === 'webhook' ? (
          <TextField label="Extra header name" value={headerName} onValue={setHeaderName} placeholder="Authorization" />
        ) : null}
        {type === 'webhook' && headerName ? (
          <TextField label="Extra header value" type="password" value={headerValue} onValue={setHeaderValue} />
        ) : null}
        <TextField label="Search (optional)" value={search} onValue={setSearch} />
        <label>
          <input type="checkbox" checked={qualityAlerts} onChange={() => setQualityAlerts(!qualityAlerts)} /> Also
          data-quality alerts (a score below the threshold, and back)
        </label>
      </CreateForm>
    </div>
  );
}

const sinkOf = (s: Subscription) => (s.sink.type === 'nats' ? `NATS ${s.sink.url} → ${s.sink.subject}` : s.sink.url);

/** `changed`, when the sign-in may write, adds the test and delete buttons and hears what they change. */
function SubscriptionsTable({ items, changed }: { items: Subscription[]; changed?: () => void }) {
  return (
    <DataTable
      label="Subscriptions"
      rows={items}
      rowKey={(s) => s.id}
      columns={[
        { header: 'Name', cell: (s) => <Link href={`/admin/subscriptions/${s.id}`}>{s.name}</Link> },
        { header: 'Sink', cell: (s) => <code>{sinkOf(s)}</code> },
        {
          header: 'Filter',
          cell: (s) =>
            [
              ...s.filter,
              ...(s.search ? [`search: ${s.search}`] : []),
              ...(s.quality_alerts ? ['quality alerts'] : []),
            ].join(', ') || 'every change',
        },
        {
          header: 'State',
          cell: (s) => `${s.enabled ? s.state : 'disabled'}${s.state_reason ? `: ${s.state_reason}` : ''}`,
        },
        { header: 'Owner', cell: (s) => s.owner.name },
        changed !== undefined && {
          header: 'Actions',
          cell: (s) => (
            <>
              <TestButton subscription={s} />
              <RevokeButton
                label={`Delete ${s.name}`}
                verb="Delete"
                path={`/api/v1/subscriptions/${s.id}`}
                done={changed}
              />
            </>
          ),
        },
      ]}
    />
  );
}

/** A button that calls the API once at a time; what `perform` returns is announced beside it, an error shown under it. */
function ActionButton({
  label,
  name,
  perform,
}: {
  label: string;
  name: string;
  perform: () => Promise<string | void>;
}) {
  const action = useAction();
  const [result, setResult] = useState<string>();
  return (
    <>
      <button
        type="button"
        aria-label={name}
        disabled={action.busy}
        onClick={() => void action.run(async () => setResult((await perform()) ?? undefined))}
      >
        {label}
      </button>
      {result ? <span role="status"> {result}</span> : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

function TestButton({ subscription }: { subscription: Subscription }) {
  return (
    <ActionButton
      label="Test"
      name={`Send a test message to ${subscription.name}`}
      perform={async () => {
        const answer = await api<SubscriptionTestResult>(`/api/v1/subscriptions/${subscription.id}/test`, {
          method: 'POST',
        });
        return answer.delivered
          ? `Delivered (${answer.response_status ?? 'acknowledged'}, ${answer.response_ms} ms)`
          : `Not delivered: ${answer.error}`;
      }}
    />
  );
}

/** One subscription's delivery log, newest first, with redelivery of what went out or was given up. */
export function SubscriptionDeliveries({ id, me }: { id: string; me: Me }) {
  const subscription = useLoad(`subscription:${id}`, (signal) =>
    api<Subscription>(`/api/v1/subscriptions/${id}`, { signal }),
  );
  const deliveries = useLoad(`deliveries:${id}`, (signal) =>
    api<Answer<'listSubscriptionDeliveries'>>(`/api/v1/subscriptions/${id}/deliveries?limit=100`, { signal }),
  );
  const mayWrite = can(me, 'subscriptions:write');
  return (
    <section aria-labelledby="deliveries-heading">
      <p>
        <Link href="/admin/subscriptions">← Subscriptions</Link>
      </p>
      <Show loaded={subscription} what="the subscription">
        {(s) => (
          <>
            <h2 id="deliveries-heading">Deliveries of {s.name}</h2>
            <p>
              <code>{sinkOf(s)}</code> · {s.enabled ? s.state : 'disabled'}
              {s.state_reason ? `: ${s.state_reason}` : ''}
            </p>
          </>
        )}
      </Show>
      <button type="button" onClick={deliveries.reload}>
        Refresh
      </button>
      <Show loaded={deliveries} what="deliveries">
        {({ items }) =>
          items.length === 0 ? (
            <Empty>Nothing delivered yet.</Empty>
          ) : (
            <DataTable
              label="Deliveries"
              rows={items}
              rowKey={(d) => d.id}
              columns={[
                { header: 'Batch', cell: (d) => `#${d.sequence}` },
                { header: 'Records', cell: (d) => d.records },
                { header: 'Status', cell: (d) => d.status },
                { header: 'Attempts', cell: (d) => d.attempts },
                {
                  header: 'Last answer',
                  cell: (d) => (d.response_status === null ? '—' : `${d.response_status} in ${d.response_ms} ms`),
                },
                { header: 'Error', cell: (d) => d.error ?? '' },
                { header: 'Last attempt', cell: (d) => dateTime(d.last_attempt_at) },
                { header: 'Next attempt', cell: (d) => dateTime(d.next_attempt_at) },
                { header: 'Message id', cell: (d) => <code>{d.message_id}</code> },
                mayWrite && {
                  header: 'Actions',
                  cell: (d) =>
                    d.status === 'pending' ? null : (
                      <RedeliverButton subscriptionId={id} delivery={d} done={deliveries.reload} />
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

function RedeliverButton({
  subscriptionId,
  delivery,
  done,
}: {
  subscriptionId: string;
  delivery: SubscriptionDelivery;
  done: () => void;
}) {
  return (
    <ActionButton
      label="Redeliver"
      name={`Redeliver batch ${delivery.sequence}`}
      perform={async () => {
        await api(`/api/v1/subscriptions/${subscriptionId}/deliveries/${delivery.id}/redeliver`, { method: 'POST' });
        done();
      }}
    />
  );
}
