import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, type Me } from '../lib/api';
import type { SignInMethods } from '../lib/api-shapes';
import { navigate, type Place } from '../lib/router';
import { asApiError, ErrorBox } from '../components/states';

/** Where to go after signing in: a path of this app, never another origin. */
function returnTo(place: Place): string {
  const target = place.params.get('return_to') ?? '';
  return target.startsWith('/ui/') && !target.startsWith('/ui/sign-in') ? target : '/ui/inventory';
}

/**
 * Single sign-on when it is configured; an API key or user token otherwise (or as well). The key
 * goes to the server once, which answers with a session cookie: it is never stored in the browser.
 */
export function SignIn({ place, onSignedIn }: { place: Place; onSignedIn: (me: Me) => void }) {
  const [methods, setMethods] = useState<SignInMethods>();
  const [key, setKey] = useState('');
  const [error, setError] = useState<ApiError>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api<SignInMethods>('/auth/methods').then(setMethods, () => setMethods({ sso: false, api_key: true }));
  }, []);
  const target = returnTo(place);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const me = await api<Me>('/auth/session', { method: 'POST', body: { api_key: key.trim() }, quiet401: true });
      setKey('');
      onSignedIn(me);
      navigate(target, { replace: true });
    } catch (failure) {
      setError(asApiError(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="sign-in">
      <h1>Sign in to cinv</h1>
      {methods?.sso ? (
        <p>
          <a class="button primary" href={`/auth/login?return_to=${encodeURIComponent(target)}`}>
            Sign in with your company account
          </a>
        </p>
      ) : null}
      <form onSubmit={(event) => void submit(event)}>
        <label for="api-key">{methods?.sso ? 'Or with an API key or token' : 'API key or token'}</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(event) => setKey((event.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {error ? <ErrorBox error={error} /> : null}
      {error?.status === 401 ? (
        <div class="hint" role="note" aria-label="How to get a key">
          <p>
            That key is unknown, revoked or expired. An administrator makes one on the server's command line (it is
            shown once), or in the web interface under Administration:
          </p>
          <pre>
            <code>npm run cinv -- keys create --tier adm --name admin</code>
          </pre>
          <p class="meta">
            <code>--tier ro</code> reads everything but secrets; <code>--tier svc</code> with <code>--permission</code>{' '}
            and <code>--scope</code> holds only what it names. <code>cinv keys create --help</code> lists the options.
          </p>
        </div>
      ) : null}
      <p class="meta">The key is exchanged for a session cookie and is not kept in the browser.</p>
    </section>
  );
}
