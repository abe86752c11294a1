import { ConfigError, type Env } from './env.js';

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string | undefined;
  redirectUri: string;
  scopes: string;
  /** The ID-token or userinfo claim listing the user's groups; each maps to the team of that name. */
  groupsClaim: string | undefined;
}

function httpUrl(env: Env, name: string): string | undefined {
  const raw = env[name] || undefined;
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(name, 'must start with http:// or https://');
  return raw;
}

/** Single sign-on, read from CINV_OIDC_*; undefined when CINV_OIDC_ISSUER is unset. */
export function oidcConfig(env: Env): OidcConfig | undefined {
  const issuer = httpUrl(env, 'CINV_OIDC_ISSUER');
  if (!issuer) return undefined;
  const clientId = env.CINV_OIDC_CLIENT_ID;
  if (!clientId) throw new ConfigError('CINV_OIDC_CLIENT_ID', 'is required when CINV_OIDC_ISSUER is set');
  const redirectUri = httpUrl(env, 'CINV_OIDC_REDIRECT_URI');
  if (!redirectUri) {
    throw new ConfigError(
      'CINV_OIDC_REDIRECT_URI',
      'is required when CINV_OIDC_ISSUER is set (e.g. https://cinv.example.com/auth/callback)',
    );
  }
  const scopes = env.CINV_OIDC_SCOPES || 'openid profile email';
  if (!scopes.split(/\s+/).includes('openid')) throw new ConfigError('CINV_OIDC_SCOPES', 'must include openid');
  return {
    issuer,
    clientId,
    clientSecret: env.CINV_OIDC_CLIENT_SECRET || undefined,
    redirectUri,
    scopes,
    groupsClaim: env.CINV_OIDC_GROUPS_CLAIM || undefined,
  };
}
