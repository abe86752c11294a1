import * as oidc from 'openid-client';
import type { OidcConfig } from '../config/config.js';
import { AppError, unavailable } from '../errors.js';
import type { Logger } from '../observability/logger.js';

/** What a sign-in in progress keeps until the provider sends the person back (a signed cookie). */
export interface PendingLogin {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
  startedAt: number;
}

/** Who the provider says signed in. */
export interface ProviderIdentity {
  issuer: string;
  subject: string;
  name: string;
  email: string | null;
  emailVerified: boolean;
  /** The groups claim (CINV_OIDC_GROUPS_CLAIM), or undefined when none is configured. */
  groups: string[] | undefined;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * OpenID Connect sign-in with openid-client: the authorization code flow with PKCE, `state` and
 * `nonce` on every login. The provider's metadata is discovered on first use and kept; a provider
 * that cannot be reached makes sign-in answer 503 until it can.
 */
export class SingleSignOn {
  private configuration: Promise<oidc.Configuration> | undefined;

  constructor(
    readonly config: OidcConfig,
    private readonly logger: Logger,
  ) {}

  private discover(): Promise<oidc.Configuration> {
    const { issuer, clientId, clientSecret } = this.config;
    const url = new URL(issuer);
    // plain http only for a provider on this machine (development, tests); anything else is TLS
    const insecure = url.protocol === 'http:' && LOOPBACK.has(url.hostname);
    this.configuration ??= oidc
      .discovery(url, clientId, clientSecret, clientSecret ? oidc.ClientSecretBasic(clientSecret) : oidc.None(), {
        execute: insecure ? [oidc.allowInsecureRequests] : [],
        timeout: 10,
      })
      .catch((error: unknown) => {
        this.configuration = undefined;
        this.logger.warn({ err: { message: (error as Error).message }, issuer }, 'identity provider discovery failed');
        throw unavailable(
          'The identity provider cannot be reached; try again shortly',
          'identity_provider_unavailable',
          5,
        );
      });
    return this.configuration;
  }

  /** The provider URL a sign-in starts at, and what the callback will check it against. */
  async start(returnTo: string, now: number): Promise<{ url: URL; pending: PendingLogin }> {
    const configuration = await this.discover();
    const verifier = oidc.randomPKCECodeVerifier();
    const pending: PendingLogin = {
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier,
      returnTo,
      startedAt: now,
    };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.config.redirectUri,
      scope: this.config.scopes,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { url, pending };
  }

  /**
   * Redeems the code the provider sent back (checking state, nonce and the PKCE verifier) and
   * reads who signed in from the ID token, with the userinfo endpoint for what it lacks.
   */
  async finish(query: string, pending: PendingLogin): Promise<ProviderIdentity> {
    const configuration = await this.discover();
    const current = new URL(this.config.redirectUri);
    current.search = query;
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      throw signInFailed(error);
    }
    const claims = tokens.claims()!;
    let info: Record<string, unknown> = { ...claims };
    const groupsClaim = this.config.groupsClaim;
    const lacking =
      typeof claims.email !== 'string' ||
      typeof claims.name !== 'string' ||
      (groupsClaim !== undefined && !(groupsClaim in claims));
    if (lacking && tokens.access_token && configuration.serverMetadata().userinfo_endpoint) {
      try {
        info = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub)), ...claims };
      } catch (error) {
        this.logger.warn(
          { err: { message: (error as Error).message } },
          'userinfo could not be read; signing in with the ID token alone',
        );
      }
    }
    const text = (value: unknown): string | undefined =>
      typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
    const email = text(info.email) ?? null;
    const rawGroups = groupsClaim === undefined ? undefined : info[groupsClaim];
    return {
      issuer: claims.iss,
      subject: claims.sub,
      name: (text(info.name) ?? text(info.preferred_username) ?? email ?? claims.sub).slice(0, 200),
      email: email && email.length <= 320 ? email : null,
      emailVerified: info.email_verified === true,
      groups: rawGroups === undefined ? (groupsClaim === undefined ? undefined : []) : toGroups(rawGroups),
    };
  }

  /** Where a browser goes to end its provider session too, when the provider offers it. */
  async endSessionUrl(postLogoutRedirect: string): Promise<URL | undefined> {
    let configuration: oidc.Configuration;
    try {
      configuration = await this.discover();
    } catch {
      return undefined;
    }
    if (!configuration.serverMetadata().end_session_endpoint) return undefined;
    return oidc.buildEndSessionUrl(configuration, {
      client_id: this.config.clientId,
      post_logout_redirect_uri: postLogoutRedirect,
    });
  }
}

function toGroups(value: unknown): string[] {
  const list = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[,\s]+/) : [];
  return [...new Set(list.filter((g): g is string => typeof g === 'string' && g !== '').map((g) => g.slice(0, 200)))];
}

/** A failed code exchange: the provider's or the check's reason, never a token. */
function signInFailed(error: unknown): AppError {
  const reason =
    error instanceof oidc.AuthorizationResponseError
      ? `the provider answered ${error.error}`
      : error instanceof oidc.ResponseBodyError
        ? `the provider refused the code (${error.error})`
        : error instanceof oidc.ClientError
          ? (error.code ?? 'the provider response did not pass its checks')
          : 'the provider response could not be checked';
  return new AppError(400, 'HTTP_400', `Sign-in failed: ${reason}; start again at /auth/login`, {
    reason: 'sso_failed',
  });
}
