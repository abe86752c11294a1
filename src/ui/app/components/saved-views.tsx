import { useState } from 'preact/hooks';
import { api } from '../lib/api';
import type { Answer, SavedView, SavedViewName } from '../lib/api-shapes';
import { Link } from '../lib/router';
import { ErrorBox, useAction, useLoad } from './states';

/**
 * The saved views of one view: links to the caller's own and the tenant's shared ones, and a form
 * that saves the view as it is now (its URL state) under a name, privately or shared.
 */
export function SavedViews({ view, params }: { view: SavedViewName; params: URLSearchParams }) {
  const loaded = useLoad(`saved-views:${view}`, (signal) =>
    api<Answer<'listSavedViews'>>('/api/v1/saved-views', { query: { view }, signal }),
  );
  const [name, setName] = useState('');
  const [shared, setShared] = useState(false);
  const action = useAction();
  const query = new URLSearchParams(params);
  // a saved view starts on its first page
  query.delete('offset');
  query.delete('cursor');
  const save = (event: Event) => {
    event.preventDefault();
    void action.run(async () => {
      await api('/api/v1/saved-views', { method: 'POST', body: { name, view, query: query.toString(), shared } });
      setName('');
      loaded.reload();
    });
  };
  const remove = (saved: SavedView) =>
    void action.run(async () => {
      await api(`/api/v1/saved-views/${saved.id}`, { method: 'DELETE' });
      loaded.reload();
    });
  const items = loaded.data?.items ?? [];
  return (
    <details class="saved-views">
      <summary>Saved views{items.length > 0 ? ` (${items.length})` : ''}</summary>
      {items.length > 0 ? (
        <ul aria-label="Saved views">
          {items.map((saved) => (
            <li key={saved.id}>
              <Link href={`/${view}${saved.query ? `?${saved.query}` : ''}`}>{saved.name}</Link>
              <span class="meta">
                {saved.shared ? ` shared${saved.mine ? '' : ` by ${saved.owner.name}`}` : ' private'}
              </span>
              {saved.mine ? (
                <button type="button" class="link" onClick={() => remove(saved)}>
                  Delete<span class="sr-only"> {saved.name}</span>
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : (
        <p class="meta">None yet.</p>
      )}
      <form class="inline" onSubmit={save}>
        <label>
          View name{' '}
          <input
            value={name}
            required
            maxLength={200}
            onInput={(event) => setName((event.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <label>
          <input
            type="checkbox"
            checked={shared}
            onChange={(event) => setShared((event.currentTarget as HTMLInputElement).checked)}
          />{' '}
          Share with everyone
        </label>
        <button type="submit" disabled={action.busy}>
          Save this view
        </button>
      </form>
      {action.error ? <ErrorBox error={action.error} /> : null}
    </details>
  );
}
