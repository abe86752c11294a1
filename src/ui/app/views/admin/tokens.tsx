import { useState } from 'preact/hooks';
import { api } from '../../lib/api';
import type { CreatedToken, Token } from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { DataTable } from '../../components/data-table';
import { SelectField, TextField } from '../../components/fields';
import { Empty, Secret, Show, useLoad } from '../../components/states';
import { CreateForm, RevokeButton } from './controls';

const LIFETIMES = [
  ['7', '7 days'],
  ['30', '30 days'],
  ['90', '90 days'],
  ['365', '1 year'],
] as const;

/** A user's tokens: listed with hint and dates, created with the secret shown once, revoked. */
export function Tokens({ base, title, mayWrite }: { base: string; title: string; mayWrite: boolean }) {
  const loaded = useLoad(base, (signal) => api<Token[]>(base, { signal }));
  const [secret, setSecret] = useState<string>();
  const created = (token: string) => {
    setSecret(token);
    loaded.reload();
  };
  return (
    <section aria-labelledby="tokens-heading">
      <h2 id="tokens-heading">{title}</h2>
      {secret ? <Secret value={secret} onDone={() => setSecret(undefined)} /> : null}
      {mayWrite ? <TokenForm base={base} created={created} /> : null}
      <Show loaded={loaded} what="tokens">
        {(tokens) =>
          tokens.length === 0 ? (
            <Empty>No tokens.</Empty>
          ) : (
            <TokensTable base={base} tokens={tokens} revoked={mayWrite ? loaded.reload : undefined} />
          )
        }
      </Show>
    </section>
  );
}

/** A new token; `created` hears its secret, which the API answers only this once. */
function TokenForm({ base, created }: { base: string; created: (token: string) => void }) {
  const [name, setName] = useState('');
  const [days, setDays] = useState('90');
  return (
    <CreateForm
      label="Create a token"
      submit="Create token"
      onSubmit={async () => {
        const expiresAt = new Date(Date.now() + Number(days) * 86_400_000).toISOString();
        const answer = await api<CreatedToken>(base, { method: 'POST', body: { name, expires_at: expiresAt } });
        created(answer.token);
        setName('');
      }}
    >
      <TextField label="Token name" required value={name} onValue={setName} />
      <SelectField label="Expires in" value={days} onValue={setDays} choices={LIFETIMES} />
    </CreateForm>
  );
}

/** `revoked`, when the sign-in may revoke, adds a revoke button to each token and hears each revocation. */
function TokensTable({ base, tokens, revoked }: { base: string; tokens: Token[]; revoked?: () => void }) {
  return (
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
        revoked !== undefined && {
          header: 'Actions',
          cell: (token) => (
            <RevokeButton label={`Revoke token ${token.name}`} path={`${base}/${token.id}`} done={revoked} />
          ),
        },
      ]}
    />
  );
}
