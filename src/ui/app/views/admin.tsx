import { useState } from 'preact/hooks';
import type { ViewProps } from '../main';
import { api, can, download, type Me } from '../lib/api';
import { dateTime } from '../lib/format';
import { Link, setParams } from '../lib/router';
import { exportName } from '../lib/csv';
import { DataTable } from '../components/data-table';
import { asApiError, Empty, ErrorBox, Secret, Show, useLoad, type Loaded } from '../components/states';

interface ApiKey {
  id: string;
  name: string;
  tier: string;
  hint: string;
  permissions: string[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

interface User {
  id: string;
  name: string;
  email: string | null;
  sso: boolean;
  superadmin: boolean;
  active: boolean;
  created_at: string;
  last_login_at: string | null;
}

interface Team {
  id: string;
  name: string;
  description: string;
  members: number;
}

interface Token {
  id: string;
  name: string;
  hint: string;
  created_at: string;
  expires_at: string;
  last_used_at: string | null;
  expired: boolean;
}

interface AuditEvent {
  id: string;
  occurred_at: string;
  event_type: string;
  outcome: string;
  actor: { kind: string; id: string | null; name: string | null };
  target: { type: string; id: string; name: string | null } | null;
  client_address: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
}

const EVENT_TYPES = [
  'auth.succeeded', 'auth.failed', 'api_key.created', 'api_key.revoked', 'token.created', 'token.revoked', 'permission.denied',
  'credentials.revealed', 'credentials.reveal_denied', 'user.created', 'user.deactivated', 'user.reactivated', 'user.promoted',
  'grant.changed', 'membership.changed',
];

function tabsFor(me: Me): [string, string][] {
  const tabs: [string, string][] = [];
  if (can(me, 'api_keys:read')) tabs.push(['keys', 'API keys']);
  if (can(me, 'users:read')) tabs.push(['users', 'Users'], ['teams', 'Teams']);
  if (me.kind === 'user') tabs.push(['tokens', 'My tokens']);
  if (can(me, 'audit:read')) tabs.push(['audit', 'Audit log']);
  return tabs;
}

export default function Admin({ me, place }: ViewProps) {
  const segments = place.path.split('/');
  const tabs = tabsFor(me);
  const tab = segments[2] ?? tabs[0]?.[0];
  return (
    <section class="admin">
      <h1>Administration</h1>
      <nav aria-label="Administration" class="subnav">
        <ul>
          {tabs.map(([name, label]) => (
            <li key={name}>
              <Link href={`/admin/${name}`} aria-current={tab === name ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {tabs.length === 0 ? <Empty>Nothing to administer with this sign-in.</Empty> : null}
      {tab === 'keys' ? <Keys me={me} /> : null}
      {tab === 'users' && segments[3] ? <UserTokens userId={segments[3]} me={me} /> : null}
      {tab === 'users' && !segments[3] ? <Users me={me} /> : null}
      {tab === 'teams' ? <Teams me={me} /> : null}
      {tab === 'tokens' ? <Tokens base="/api/v1/tokens" title="My tokens" mayWrite /> : null}
      {tab === 'audit' ? <Audit params={place.params} /> : null}
    </section>
  );
}

/** A form's submit with its busy flag and the error to show. */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ReturnType<typeof asApiError>>();
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(asApiError(failure));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

function Keys({ me }: { me: Me }) {
  const loaded = useLoad('keys', (signal) => api<ApiKey[]>('/api/v1/api-keys', { signal }));
  const [secret, setSecret] = useState<string>();
  const [name, setName] = useState('');
  const [tier, setTier] = useState('ro');
  const action = useAction();
  const mayWrite = can(me, 'api_keys:write');
  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      {secret ? <Secret value={secret} onDone={() => setSecret(undefined)} /> : null}
      {mayWrite ? (
        <form
          class="inline-form"
          aria-label="Create an API key"
          onSubmit={(event) => {
            event.preventDefault();
            void action.run(async () => {
              const created = await api<{ key: string }>('/api/v1/api-keys', { method: 'POST', body: { name, tier } });
              setSecret(created.key);
              setName('');
              loaded.reload();
            });
          }}
        >
          <label>
            Name <input required value={name} onInput={(event) => setName((event.currentTarget as HTMLInputElement).value)} />
          </label>
          <label>
            Tier{' '}
            <select value={tier} onChange={(event) => setTier((event.currentTarget as HTMLSelectElement).value)}>
              <option value="ro">ro (read-only)</option>
              <option value="adm">adm (full access)</option>
              <option value="svc">svc (assigned rights)</option>
            </select>
          </label>
          <button type="submit" disabled={action.busy}>
            Create key
          </button>
        </form>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
      <Show loaded={loaded} what="API keys">
        {(keys) =>
          keys.length === 0 ? (
            <Empty>No API keys.</Empty>
          ) : (
            <DataTable
              label="API keys"
              rows={keys}
              rowKey={(key) => key.id}
              columns={[
                { header: 'Name', cell: (key) => key.name },
                { header: 'Tier', cell: (key) => key.tier },
                { header: 'Key ends in', cell: (key) => <code>…{key.hint}</code> },
                { header: 'Created', cell: (key) => dateTime(key.created_at) },
                { header: 'Expires', cell: (key) => dateTime(key.expires_at) },
                { header: 'Last used', cell: (key) => dateTime(key.last_used_at) },
                mayWrite && { header: 'Actions', cell: (key) => <RevokeButton label={`Revoke key ${key.name}`} path={`/api/v1/api-keys/${key.id}`} done={loaded.reload} /> },
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}

/** Revokes after a second click, so a stray click revokes nothing. */
function RevokeButton({ label, path, done }: { label: string; path: string; done: () => void }) {
  const [armed, setArmed] = useState(false);
  const action = useAction();
  return (
    <>
      <button
        type="button"
        class={armed ? 'danger' : ''}
        aria-label={armed ? `Confirm: ${label}` : label}
        disabled={action.busy}
        onClick={() => {
          if (!armed) {
            setArmed(true);
            return;
          }
          void action.run(async () => {
            await api(path, { method: 'DELETE' });
            done();
          });
        }}
      >
        {armed ? 'Confirm revoke' : 'Revoke'}
      </button>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </>
  );
}

function Users({ me }: { me: Me }) {
  const loaded = useLoad('users', (signal) => api<{ items: User[] }>('/api/v1/users', { query: { limit: 200 }, signal }));
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const action = useAction();
  const mayWrite = can(me, 'users:write');
  return (
    <section aria-labelledby="users-heading">
      <h2 id="users-heading">Users</h2>
      {mayWrite ? (
        <form
          class="inline-form"
          aria-label="Add a token-only user"
          onSubmit={(event) => {
            event.preventDefault();
            void action.run(async () => {
              await api('/api/v1/users', { method: 'POST', body: { name, email: email.trim() || null } });
              setName('');
              setEmail('');
              loaded.reload();
            });
          }}
        >
          <label>
            Name <input required value={name} onInput={(event) => setName((event.currentTarget as HTMLInputElement).value)} />
          </label>
          <label>
            Email <input type="email" value={email} onInput={(event) => setEmail((event.currentTarget as HTMLInputElement).value)} />
          </label>
          <button type="submit" disabled={action.busy}>
            Add token-only user
          </button>
        </form>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
      <Show loaded={loaded} what="users">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No users yet: people appear here at their first single sign-on.</Empty>
          ) : (
            <DataTable
              label="Users"
              rows={page.items}
              rowKey={(user) => user.id}
              columns={[
                {
                  header: 'Name',
                  cell: (user) => (
                    <>
                      <Link href={`/admin/users/${user.id}`}>{user.name}</Link>
                      {user.superadmin ? <span class="badge"> superadmin</span> : null}
                    </>
                  ),
                },
                { header: 'Email', cell: (user) => user.email ?? '—' },
                { header: 'Signs in', cell: (user) => (user.sso ? 'single sign-on' : 'tokens only') },
                { header: 'State', cell: (user) => (user.active ? 'active' : 'deactivated') },
                { header: 'Last sign-in', cell: (user) => dateTime(user.last_login_at) },
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}

function UserTokens({ userId, me }: { userId: string; me: Me }) {
  const user = useLoad(userId, (signal) => api<User>(`/api/v1/users/${encodeURIComponent(userId)}`, { signal }));
  return (
    <Show loaded={user} what="the user">
      {(found) => (
        <>
          <p>
            <Link href="/admin/users">← Users</Link>
          </p>
          <Tokens base={`/api/v1/users/${found.id}/tokens`} title={`Tokens of ${found.name}`} mayWrite={can(me, 'users:write')} />
        </>
      )}
    </Show>
  );
}

/** A user's tokens: listed with hint and dates, created with the secret shown once, revoked. */
function Tokens({ base, title, mayWrite }: { base: string; title: string; mayWrite: boolean }) {
  const loaded: Loaded<Token[]> = useLoad(base, (signal) => api<Token[]>(base, { signal }));
  const [secret, setSecret] = useState<string>();
  const [name, setName] = useState('');
  const [days, setDays] = useState('90');
  const action = useAction();
  return (
    <section aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">{title}</h2>
      {secret ? <Secret value={secret} onDone={() => setSecret(undefined)} /> : null}
      {mayWrite ? (
        <form
          class="inline-form"
          aria-label="Create a token"
          onSubmit={(event) => {
            event.preventDefault();
            void action.run(async () => {
              const expiresAt = new Date(Date.now() + Number(days) * 86_400_000).toISOString();
              const created = await api<{ token: string }>(base, { method: 'POST', body: { name, expires_at: expiresAt } });
              setSecret(created.token);
              setName('');
              loaded.reload();
            });
          }}
        >
          <label>
            Token name <input required value={name} onInput={(event) => setName((event.currentTarget as HTMLInputElement).value)} />
          </label>
          <label>
            Expires in{' '}
            <select value={days} onChange={(event) => setDays((event.currentTarget as HTMLSelectElement).value)}>
              <option value="7">7 days</option>
              <option value="30">30 days</option>
              <option value="90">90 days</option>
              <option value="365">1 year</option>
            </select>
          </label>
          <button type="submit" disabled={action.busy}>
            Create token
          </button>
        </form>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
      <Show loaded={loaded} what="tokens">
        {(tokens) =>
          tokens.length === 0 ? (
            <Empty>No tokens.</Empty>
          ) : (
            <DataTable
              label="Tokens"
              rows={tokens}
              rowKey={(token) => token.id}
              columns={[
                { header: 'Name', cell: (token) => token.name },
                { header: 'Ends in', cell: (token) => <code>…{token.hint}</code> },
                { header: 'Created', cell: (token) => dateTime(token.created_at) },
                { header: 'Expires', cell: (token) => `${dateTime(token.expires_at)}${token.expired ? ' (expired)' : ''}` },
                { header: 'Last used', cell: (token) => dateTime(token.last_used_at) },
                mayWrite && { header: 'Actions', cell: (token) => <RevokeButton label={`Revoke token ${token.name}`} path={`${base}/${token.id}`} done={loaded.reload} /> },
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}

function Teams({ me }: { me: Me }) {
  const loaded = useLoad('teams', (signal) => api<{ items: Team[] }>('/api/v1/teams', { query: { limit: 200 }, signal }));
  const [name, setName] = useState('');
  const action = useAction();
  return (
    <section aria-labelledby="teams-heading">
      <h2 id="teams-heading">Teams</h2>
      {can(me, 'users:write') ? (
        <form
          class="inline-form"
          aria-label="Create a team"
          onSubmit={(event) => {
            event.preventDefault();
            void action.run(async () => {
              await api('/api/v1/teams', { method: 'POST', body: { name } });
              setName('');
              loaded.reload();
            });
          }}
        >
          <label>
            Team name <input required value={name} onInput={(event) => setName((event.currentTarget as HTMLInputElement).value)} />
          </label>
          <button type="submit" disabled={action.busy}>
            Create team
          </button>
        </form>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
      <Show loaded={loaded} what="teams">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No teams.</Empty>
          ) : (
            <DataTable
              label="Teams"
              rows={page.items}
              rowKey={(team) => team.id}
              columns={[
                { header: 'Name', cell: (team) => team.name },
                { header: 'Description', cell: (team) => team.description },
                { header: 'Members', cell: (team) => team.members },
              ]}
            />
          )
        }
      </Show>
    </section>
  );
}

function Audit({ params }: { params: URLSearchParams }) {
  const query = {
    event_type: params.get('event_type') ?? undefined,
    outcome: params.get('outcome') ?? undefined,
    cursor: params.get('cursor') ?? undefined,
    limit: 100,
  };
  const loaded = useLoad(JSON.stringify(query), (signal) => api<{ items: AuditEvent[]; has_more: boolean; next_cursor: string | null }>('/api/v1/audit-events', { query, signal }));
  const action = useAction();
  return (
    <section aria-labelledby="audit-heading">
      <h2 id="audit-heading">Audit log</h2>
      <div class="filter-row">
        <label>
          Event{' '}
          <select value={query.event_type ?? ''} onChange={(event) => setParams({ event_type: (event.currentTarget as HTMLSelectElement).value || undefined, cursor: undefined })}>
            <option value="">Any</option>
            {EVENT_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </label>
        <label>
          Outcome{' '}
          <select value={query.outcome ?? ''} onChange={(event) => setParams({ outcome: (event.currentTarget as HTMLSelectElement).value || undefined, cursor: undefined })}>
            <option value="">Any</option>
            <option value="success">success</option>
            <option value="failure">failure</option>
          </select>
        </label>
        <button
          type="button"
          disabled={action.busy}
          onClick={() => void action.run(() => download('/api/v1/audit-events', { accept: 'text/csv', query: { event_type: query.event_type, outcome: query.outcome } }, exportName('audit')))}
        >
          Download CSV
        </button>
      </div>
      {action.error ? <ErrorBox error={action.error} /> : null}
      <Show loaded={loaded} what="audit events">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No events match.</Empty>
          ) : (
            <>
              <DataTable
                label="Audit events"
                rows={page.items}
                rowKey={(event) => event.id}
                columns={[
                  { header: 'When', cell: (event) => dateTime(event.occurred_at) },
                  { header: 'Event', cell: (event) => event.event_type },
                  { header: 'Outcome', cell: (event) => event.outcome },
                  { header: 'Actor', cell: (event) => event.actor.name ?? event.actor.kind },
                  { header: 'Target', cell: (event) => (event.target ? `${event.target.type} ${event.target.name ?? event.target.id}` : '—') },
                  { header: 'Client', cell: (event) => event.client_address ?? '—' },
                  { header: 'Details', class: 'value', cell: (event) => (Object.keys(event.details).length ? JSON.stringify(event.details) : '') },
                ]}
              />
              <nav class="pager" aria-label="Audit pages">
                {query.cursor ? (
                  <button type="button" onClick={() => history.back()}>
                    ← Newer
                  </button>
                ) : null}
                <button type="button" disabled={!page.has_more || !page.next_cursor} onClick={() => setParams({ cursor: page.next_cursor ?? undefined })}>
                  Older →
                </button>
              </nav>
            </>
          )
        }
      </Show>
    </section>
  );
}
