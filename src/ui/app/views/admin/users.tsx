import { useState } from 'preact/hooks';
import { api, can, type Me } from '../../lib/api';
import type { Answer, UserDetail, UserSummary } from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { Link } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { TextField } from '../../components/fields';
import { Empty, Show, useLoad } from '../../components/states';
import { CreateForm } from './controls';
import { Tokens } from './tokens';

export function Users({ me }: { me: Me }) {
  const loaded = useLoad('users', (signal) =>
    api<Answer<'listUsers'>>('/api/v1/users', { query: { limit: 200 }, signal }),
  );
  return (
    <section aria-labelledby="users-heading">
      <h2 id="users-heading">Users</h2>
      {can(me, 'users:write') ? <UserForm created={loaded.reload} /> : null}
      <Show loaded={loaded} what="users">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No users yet: people appear here at their first single sign-on.</Empty>
          ) : (
            <UsersTable users={page.items} />
          )
        }
      </Show>
    </section>
  );
}

/** A user who never signs in with single sign-on and acts through the tokens made for them. */
function UserForm({ created }: { created: () => void }) {
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  return (
    <CreateForm
      label="Add a token-only user"
      submit="Add token-only user"
      onSubmit={async () => {
        await api('/api/v1/users', { method: 'POST', body: { name, email: email.trim() || null } });
        setName('');
        setEmail('');
        created();
      }}
    >
      <TextField label="Name" required value={name} onValue={setName} />
      <TextField label="Email" type="email" value={email} onValue={setEmail} />
    </CreateForm>
  );
}

function UsersTable({ users }: { users: UserSummary[] }) {
  return (
    <DataTable
      label="Users"
      rows={users}
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
  );
}

export function UserTokens({ userId, me }: { userId: string; me: Me }) {
  const user = useLoad(userId, (signal) => api<UserDetail>(`/api/v1/users/${encodeURIComponent(userId)}`, { signal }));
  return (
    <Show loaded={user} what="the user">
      {(found) => (
        <>
          <p>
            <Link href="/admin/users">← Users</Link>
          </p>
          <Tokens
            base={`/api/v1/users/${found.id}/tokens`}
            title={`Tokens of ${found.name}`}
            mayWrite={can(me, 'users:write')}
          />
        </>
      )}
    </Show>
  );
}
