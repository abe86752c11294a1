import { useState } from 'preact/hooks';
import type { ViewProps } from '../main';
import { api, can, download, type Me } from '../lib/api';
import { dateTime } from '../lib/format';
import { Link, setParams } from '../lib/router';
import { exportName } from '../lib/csv';
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
            <table class="grid" aria-label="API keys">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Tier</th>
                  <th scope="col">Key ends in</th>
                  <th scope="col">Created</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Last used</th>
                  {mayWrite ? <th scope="col">Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {keys.map((key) => (
                  <tr key={key.id}>
                    <td>{key.name}</td>
                    <td>{key.tier}</td>
                    <td>
                      <code>…{key.hint}</code>
                    </td>
                    <td>{dateTime(key.created_at)}</td>
                    <td>{dateTime(key.expires_at)}</td>
                    <td>{dateTime(key.last_used_at)}</td>
                    {mayWrite ? (
                      <td>
                        <RevokeButton label={`Revoke key ${key.name}`} path={`/api/v1/api-keys/${key.id}`} done={loaded.reload} />
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
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
            <table class="grid" aria-label="Users">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Email</th>
                  <th scope="col">Signs in</th>
                  <th scope="col">State</th>
                  <th scope="col">Last sign-in</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((user) => (
                  <tr key={user.id}>
                    <td>
                      <Link href={`/admin/users/${user.id}`}>{user.name}</Link>
                      {user.superadmin ? <span class="badge"> superadmin</span> : null}
                    </td>
                    <td>{user.email ?? '—'}</td>
                    <td>{user.sso ? 'single sign-on' : 'tokens only'}</td>
                    <td>{user.active ? 'active' : 'deactivated'}</td>
                    <td>{dateTime(user.last_login_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
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
            <table class="grid" aria-label="Tokens">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Ends in</th>
                  <th scope="col">Created</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Last used</th>
                  {mayWrite ? <th scope="col">Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {tokens.map((token) => (
                  <tr key={token.id}>
                    <td>{token.name}</td>
                    <td>
                      <code>…{token.hint}</code>
                    </td>
                    <td>{dateTime(token.created_at)}</td>
                    <td>
                      {dateTime(token.expires_at)}
                      {token.expired ? ' (expired)' : ''}
                    </td>
                    <td>{dateTime(token.last_used_at)}</td>
                    {mayWrite ? (
                      <td>
                        <RevokeButton label={`Revoke token ${token.name}`} path={`${base}/${token.id}`} done={loaded.reload} />
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
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
            <table class="grid" aria-label="Teams">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Description</th>
                  <th scope="col">Members</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((team) => (
                  <tr key={team.id}>
                    <td>{team.name}</td>
                    <td>{team.description}</td>
                    <td>{team.members}</td>
                  </tr>
                ))}
              </tbody>
            </table>
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
              <table class="grid" aria-label="Audit events">
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Event</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Actor</th>
                    <th scope="col">Target</th>
                    <th scope="col">Client</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {page.items.map((event) => (
                    <tr key={event.id}>
                      <td>{dateTime(event.occurred_at)}</td>
                      <td>{event.event_type}</td>
                      <td>{event.outcome}</td>
                      <td>{event.actor.name ?? event.actor.kind}</td>
                      <td>{event.target ? `${event.target.type} ${event.target.name ?? event.target.id}` : '—'}</td>
                      <td>{event.client_address ?? '—'}</td>
                      <td class="value">{Object.keys(event.details).length ? JSON.stringify(event.details) : ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
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
