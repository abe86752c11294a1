import { useState } from 'preact/hooks';
import { api, can, type Me } from '../../lib/api';
import type { ApiKey, CreatedApiKey, DataScope } from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { DataTable } from '../../components/data-table';
import { SelectField, TextField } from '../../components/fields';
import { Empty, Secret, Show, useLoad } from '../../components/states';
import { CreateForm, RevokeButton } from './controls';
import { PermissionsPicker, ScopesPicker } from './rights-picker';

const TIERS = [
  ['ro', 'ro (read-only)'],
  ['adm', 'adm (full access)'],
  ['svc', 'svc (assigned rights)'],
] as const;

export function Keys({ me }: { me: Me }) {
  const loaded = useLoad('keys', (signal) => api<ApiKey[]>('/api/v1/api-keys', { signal }));
  const [secret, setSecret] = useState<string>();
  const mayWrite = can(me, 'api_keys:write');
  const created = (key: string) => {
    setSecret(key);
    loaded.reload();
  };
  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      {secret ? <Secret value={secret} onDone={() => setSecret(undefined)} /> : null}
      {mayWrite ? <KeyForm me={me} created={created} /> : null}
      <Show loaded={loaded} what="API keys">
        {(keys) =>
          keys.length === 0 ? (
            <Empty>No API keys.</Empty>
          ) : (
            <KeysTable keys={keys} revoked={mayWrite ? loaded.reload : undefined} />
          )
        }
      </Show>
    </section>
  );
}

/**
 * A new key; `created` hears its secret, which the API answers only this once. An `svc` key holds
 * what is ticked here, chosen among the signed-in principal's own rights.
 */
function KeyForm({ me, created }: { me: Me; created: (key: string) => void }) {
  const [name, setName] = useState('');
  const [tier, setTier] = useState('ro');
  const [permissions, setPermissions] = useState<string[]>([]);
  const [scopes, setScopes] = useState<DataScope[]>([]);
  return (
    <CreateForm
      label="Create an API key"
      submit="Create key"
      onSubmit={async () => {
        const rights = tier === 'svc' ? { permissions, scopes } : {};
        const answer = await api<CreatedApiKey>('/api/v1/api-keys', {
          method: 'POST',
          body: { name, tier, ...rights },
        });
        created(answer.key);
        setName('');
        setPermissions([]);
        setScopes([]);
      }}
    >
      <TextField label="Name" required value={name} onValue={setName} />
      <SelectField label="Tier" value={tier} onValue={setTier} choices={TIERS} />
      {tier === 'svc' ? (
        <div class="rights-pickers">
          <PermissionsPicker me={me} chosen={permissions} onChange={setPermissions} />
          <ScopesPicker me={me} chosen={scopes} onChange={setScopes} />
        </div>
      ) : null}
    </CreateForm>
  );
}

/** `revoked`, when the sign-in may revoke, adds a revoke button to each key and hears each revocation. */
function KeysTable({ keys, revoked }: { keys: ApiKey[]; revoked?: () => void }) {
  return (
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
        revoked !== undefined && {
          header: 'Actions',
          cell: (key) => (
            <RevokeButton label={`Revoke key ${key.name}`} path={`/api/v1/api-keys/${key.id}`} done={revoked} />
          ),
        },
      ]}
    />
  );
}
