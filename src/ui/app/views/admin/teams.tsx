import { useState } from 'preact/hooks';
import { api, can, type Me } from '../../lib/api';
import type { Answer } from '../../lib/api-shapes';
import { DataTable } from '../../components/data-table';
import { TextField } from '../../components/fields';
import { Empty, Show, useLoad } from '../../components/states';
import { CreateForm } from './controls';

export function Teams({ me }: { me: Me }) {
  const loaded = useLoad('teams', (signal) =>
    api<Answer<'listTeams'>>('/api/v1/teams', { query: { limit: 200 }, signal }),
  );
  return (
    <section aria-labelledby="teams-heading">
      <h2 id="teams-heading">Teams</h2>
      {can(me, 'users:write') ? <TeamForm created={loaded.reload} /> : null}
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

function TeamForm({ created }: { created: () => void }) {
  const [name, setName] = useState('');
  return (
    <CreateForm
      label="Create a team"
      submit="Create team"
      onSubmit={async () => {
        await api('/api/v1/teams', { method: 'POST', body: { name } });
        setName('');
        created();
      }}
    >
      <TextField label="Team name" required value={name} onValue={setName} />
    </CreateForm>
  );
}
