import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** A person at the provider: the claims it releases about them. */
export interface ProviderAccount {
  sub: string;
  name: string;
  email: string;
  email_verified?: boolean;
  groups?: string[];
}

export interface RunningProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Who signs in at the next login interaction. */
  signInAs(account: ProviderAccount): void;
  close(): Promise<void>;
}

/**
 * A real OpenID provider (the `oidc-provider` package), in process on a free port, with one
 * confidential client registered for `redirectUri`. Its login and consent interactions complete
 * at once for the account chosen with `signInAs`, as a person clicking through would.
 */
export async function startOidcProvider(redirectUri: string, postLogoutRedirectUri: string): Promise<RunningProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'cinv';
  const clientSecret = 'provider-test-client-secret-provider-test';
  const accounts = new Map<string, ProviderAccount>();
  let current: ProviderAccount | undefined;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        post_logout_redirect_uris: [postLogoutRedirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    pkce: { required: () => true },
    cookies: { keys: ['provider-cookie-key-provider-cookie-key'] },
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: true } },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      return account ? { accountId: sub, claims: () => ({ ...account }) } : undefined;
    },
  });

  server.on('request', (req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      void finishInteraction(req, res).catch((error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      });
      return;
    }
    void provider.callback()(req, res);
  });

  async function finishInteraction(
    req: Parameters<Provider['interactionDetails']>[0],
    res: Parameters<Provider['interactionDetails']>[1],
  ) {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      if (!current) throw new Error('nobody to sign in as');
      accounts.set(current.sub, current);
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId: current.sub } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const grant = new provider.Grant({
      accountId: details.session!.accountId,
      clientId: details.params.client_id as string,
    });
    grant.addOIDCScope(String(details.params.scope));
    await provider.interactionFinished(
      req,
      res,
      { consent: { grantId: await grant.save() } },
      { mergeWithLastSubmission: true },
    );
  }

  return {
    issuer,
    clientId,
    clientSecret,
    signInAs(account) {
      current = account;
      accounts.set(account.sub, account);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A browser, as far as sign-in needs one: follows redirects by hand and keeps each origin's
 * cookies (the provider's and cinv's) like a browser would, so every step can be inspected.
 */
export class Browser {
  private readonly jars = new Map<string, Map<string, string>>();

  cookie(origin: string, name: string): string | undefined {
    return this.jars.get(origin)?.get(name);
  }

  setCookie(origin: string, name: string, value: string | undefined): void {
    const jar = this.jars.get(origin) ?? new Map<string, string>();
    if (value === undefined) jar.delete(name);
    else jar.set(name, value);
    this.jars.set(origin, jar);
  }

  /** One request with this origin's cookies; remembers what the answer sets. */
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const { origin } = new URL(url);
    const jar = this.jars.get(origin) ?? new Map<string, string>();
    const headers = new Headers(init.headers);
    if (jar.size > 0) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const expired = attributes.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0\b/i.test(a));
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    this.jars.set(origin, jar);
    return response;
  }

  /**
   * Follows redirects from `url` until one points at `stopAt` (not fetched) or a page answers;
   * returns the URL it stopped at and the last response.
   */
  async follow(url: string, stopAt?: string): Promise<{ url: string; response: Response }> {
    let next = url;
    for (let hops = 0; hops < 20; hops++) {
      if (stopAt && next.startsWith(stopAt)) return { url: next, response: new Response(null, { status: 204 }) };
      const response = await this.fetch(next, { headers: { accept: 'text/html' } });
      const location = response.headers.get('location');
      if (response.status < 300 || response.status >= 400 || !location) return { url: next, response };
      next = new URL(location, next).href;
    }
    throw new Error('too many redirects');
  }
}
