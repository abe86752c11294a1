import type { ViewProps } from '../view';
import { can, type Me } from '../../lib/api';
import { Link } from '../../lib/router';
import { Empty } from '../../components/states';
import { Audit } from './audit';
import { Keys } from './keys';
import { SubscriptionDeliveries, Subscriptions } from './subscriptions';
import { Teams } from './teams';
import { Tokens } from './tokens';
import { Users, UserTokens } from './users';

function tabsFor(me: Me): [string, string][] {
  const tabs: [string, string][] = [];
  if (can(me, 'api_keys:read')) tabs.push(['keys', 'API keys']);
  if (can(me, 'users:read')) tabs.push(['users', 'Users'], ['teams', 'Teams']);
  if (me.kind === 'user') tabs.push(['tokens', 'My tokens']);
  if (can(me, 'subscriptions:read')) tabs.push(['subscriptions', 'Subscriptions']);
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
      {tab === 'subscriptions' && segments[3] ? <SubscriptionDeliveries id={segments[3]} me={me} /> : null}
      {tab === 'subscriptions' && !segments[3] ? <Subscriptions me={me} /> : null}
      {tab === 'audit' ? <Audit params={place.params} /> : null}
    </section>
  );
}
