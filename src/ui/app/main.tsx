import { render, type FunctionComponent } from 'preact';
import { applyTheme, ThemeToggle } from './components/theme';
import { TimeZoneToggle } from './components/time-zone';
import { timeZone } from './lib/format';
import { Shortcuts } from './components/shortcuts';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, can, whenUnauthorized, type Me } from './lib/api';
import { currentRelative, Link, navigate, useLocation } from './lib/router';
import { asApiError, ErrorBox, Loading, retryable } from './components/states';
import { SignIn } from './views/sign-in';
import type { ViewProps } from './views/view';
import './styles.css';
import './views/query/query.css';

type ViewModule = { default: FunctionComponent<ViewProps> };

/** Views load on demand: the first page carries only the shell and the sign-in form. */
const VIEWS: Record<string, () => Promise<ViewModule>> = {
  inventory: () => import('./views/inventory/inventory'),
  ci: () => import('./views/ci'),
  identities: () => import('./views/identities/identities'),
  quality: () => import('./views/quality/quality'),
  compare: () => import('./views/compare/compare'),
  changes: () => import('./views/changes/changes'),
  query: () => import('./views/query/query'),
  stats: () => import('./views/stats'),
  sources: () => import('./views/sources'),
  admin: () => import('./views/admin/admin'),
};
const loaded: Record<string, ViewModule> = {};

const TITLES: Record<string, string> = {
  inventory: 'Inventory',
  ci: 'Configuration item',
  identities: 'Identities',
  quality: 'Data quality',
  compare: 'Compare',
  changes: 'Change search',
  query: 'Query',
  stats: 'Statistics',
  sources: 'Sources',
  admin: 'Administration',
};

/** How long to wait before asking again: the server's Retry-After (as `details.retry_after`), else 5 s. */
function retryDelayMs(error: ApiError): number {
  const seconds = Number(error.details.retry_after);
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 300) * 1000 : 5_000;
}

function LazyView({ name, props }: { name: string; props: ViewProps }) {
  const [module, setModule] = useState<ViewModule | undefined>(loaded[name]);
  const [error, setError] = useState<ApiError>();
  useEffect(() => {
    if (loaded[name]) {
      setModule(loaded[name]);
      return;
    }
    setModule(undefined);
    VIEWS[name]!().then(
      (loadedModule) => {
        loaded[name] = loadedModule;
        setModule(loadedModule);
      },
      (failure: unknown) => setError(asApiError(failure)),
    );
  }, [name]);
  if (error) return <ErrorBox error={error} retry={() => location.reload()} />;
  if (!module) return <Loading what={TITLES[name]?.toLowerCase() ?? 'the view'} />;
  const View = module.default;
  return <View {...props} />;
}

function Navigation({ me, current }: { me: Me; current: string }) {
  const links: [string, string, boolean][] = [
    ['inventory', 'Inventory', can(me, 'configuration_items:read')],
    ['identities', 'Identities', can(me, 'configuration_items:read')],
    ['quality', 'Quality', can(me, 'configuration_items:read')],
    ['compare', 'Compare', can(me, 'configuration_items:read')],
    ['changes', 'Changes', can(me, 'changes:read')],
    ['query', 'Query', can(me, 'configuration_items:read')],
    ['stats', 'Statistics', can(me, 'changes:read')],
    ['sources', 'Sources', can(me, 'sources:read') || can(me, 'collectors:read')],
    [
      'admin',
      'Administration',
      can(me, 'api_keys:read') ||
        can(me, 'users:read') ||
        can(me, 'audit:read') ||
        can(me, 'subscriptions:read') ||
        me.kind === 'user',
    ],
  ];
  return (
    <nav aria-label="Views">
      <ul>
        {links
          .filter(([, , allowed]) => allowed)
          .map(([name, label]) => (
            <li key={name}>
              <Link
                href={`/${name}`}
                aria-current={current === name || (current === 'ci' && name === 'inventory') ? 'page' : undefined}
              >
                {label}
              </Link>
            </li>
          ))}
      </ul>
    </nav>
  );
}

/**
 * Who is signed in: undefined while asking, null when nobody is. A 401 anywhere signs out; a limit
 * or an outage while asking is asked again when the server says, without a reload.
 */
function useSignedIn() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const [failure, setFailure] = useState<ApiError>();

  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    whenUnauthorized(() => {
      setMe(null);
      if (!location.pathname.startsWith('/ui/sign-in')) {
        navigate(`/sign-in?return_to=${encodeURIComponent(`/ui${currentRelative()}`)}`, { replace: true });
      }
    });
  }, []);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    // the session check: a page load before sign-in is not a failed authentication (not audited)
    api<Me>('/auth/me', { quiet401: true }).then(
      (found) => {
        setFailure(undefined);
        setMe(found);
      },
      (error: unknown) => {
        const apiError = asApiError(error);
        if (apiError.status === 401) return setMe(null);
        setFailure(apiError);
        // a limit or an outage passes: ask again when the server says, without a reload
        if (retryable(apiError)) timer = setTimeout(() => setAttempt((n) => n + 1), retryDelayMs(apiError));
      },
    );
    return () => clearTimeout(timer);
  }, [attempt]);

  return { me, setMe, failure, retry: () => setAttempt((n) => n + 1) };
}

function App() {
  const place = useLocation();
  const { me, setMe, failure, retry } = useSignedIn();
  const [zone, setZone] = useState(timeZone);

  const name = place.path.split('/')[1] || 'inventory';
  useEffect(() => {
    document.title = `${name === 'sign-in' ? 'Sign in' : (TITLES[name] ?? 'Not found')} · cinv`;
  }, [name]);
  useEffect(() => {
    if (me === null && name !== 'sign-in') {
      navigate(`/sign-in?return_to=${encodeURIComponent(`/ui${currentRelative()}`)}`, { replace: true });
    }
    if (me && name === 'sign-in') navigate('/inventory', { replace: true });
  }, [me, name]);

  if (failure && !me) {
    return (
      <main id="main">
        <ErrorBox error={failure} retry={retry} />
        {retryable(failure) ? (
          <p class="meta" role="status">
            Trying again in {Math.round(retryDelayMs(failure) / 1000)} s.
          </p>
        ) : null}
      </main>
    );
  }
  if (me === undefined) return <Loading what="cinv" />;
  if (name === 'sign-in' || me === null) {
    return (
      <main id="main" class="sign-in-page">
        <SignIn place={place} onSignedIn={setMe} />
      </main>
    );
  }
  const signOut = async () => {
    await api('/auth/logout', { method: 'POST' }).catch(() => undefined);
    setMe(null);
    navigate('/sign-in', { replace: true });
  };
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/inventory" class="brand">
          cinv
        </Link>
        <Navigation me={me} current={name} />
        <div class="who">
          <span title={me.user?.email ?? me.tier ?? ''}>
            {me.user?.name ?? me.name}
            {me.tier ? <span class="meta"> ({me.tier} key)</span> : null}
          </span>
          <TimeZoneToggle zone={zone} onChange={setZone} />
          <ThemeToggle />
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </div>
      </header>
      {/* keyed by the zone: every time on the page is drawn again in the new one */}
      <main id="main" tabIndex={-1} key={zone}>
        {VIEWS[name] ? <LazyView name={name} props={{ me, place }} /> : <NotFound />}
      </main>
      <Shortcuts />
    </>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no view here. Go to the <Link href="/inventory">inventory</Link>.
      </p>
    </section>
  );
}

if (location.pathname === '/ui' || location.pathname === '/ui/') navigate('/inventory', { replace: true });
applyTheme();
render(<App />, document.getElementById('app')!);
