import type { AppContext } from '../../context.js';
import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { forbidden, validationFailed } from '../../platform/errors.js';
import { AllowedHosts, allowedHostsOf, refusedEndpoint } from '../../platform/net/endpoint.js';
import type { SubscriptionInput } from './schema.js';
import type { StoredSink } from './store.js';

/**
 * The receivers a subscription of this owner may reach: the endpoint policy of sources, where a
 * loopback, private or otherwise non-public receiver needs what a source needs, access to all data.
 * A webhook needs one permission; without this rule anyone holding it could make the server speak
 * to its internal listeners with headers of their choosing. Networks listed in
 * CINV_SOURCE_ALLOWED_HOSTS are reachable for every owner, as long as CINV_SOURCE_ALLOW_PRIVATE
 * lets anything private be reached. A departed owner (undefined) reaches no other private receiver.
 */
export function receiverPolicy(app: AppContext, owner: Principal | undefined): AllowedHosts {
  const { sourceAllowedHosts, sourceAllowPrivate } = app.config;
  if (owner !== undefined && seesAllData(owner)) return allowedHostsOf(app.config);
  // networks the operator listed in CINV_SOURCE_ALLOWED_HOSTS stay reachable: those receivers are named
  return new AllowedHosts(sourceAllowedHosts, { allowPrivate: false, listedPrivate: sourceAllowPrivate });
}

/** How this server sends: the endpoint policy, the receivers' time limit, the clock. */
export const sendOptionsOf = (app: AppContext, owner: Principal | undefined) => ({
  allowedHosts: receiverPolicy(app, owner),
  timeoutMs: app.config.webhookTimeoutMs,
  now: app.now(),
});

export async function checkedSink(
  app: AppContext,
  principal: Principal,
  input: SubscriptionInput['sink'],
): Promise<{ stored: StoredSink; headers: Record<string, string> }> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw validationFailed([{ field: 'sink.url', location: 'body', message: 'must be an absolute URL' }]);
  }
  const schemes = input.type === 'webhook' ? ['http:', 'https:'] : ['nats:'];
  if (!schemes.includes(url.protocol)) {
    throw validationFailed([
      { field: 'sink.url', location: 'body', message: `a ${input.type} sink takes ${schemes.join(' or ')} URLs` },
    ]);
  }
  if (url.username || url.password) {
    const instead = input.type === 'webhook' ? ': pass them as sink.headers, which are kept sealed' : '';
    throw validationFailed([{ field: 'sink.url', location: 'body', message: `must not hold credentials${instead}` }]);
  }
  const refused = await refusedEndpoint(url, allowedHostsOf(app.config));
  if (refused)
    throw validationFailed([{ field: 'sink.url', location: 'body', message: `endpoint refused: ${refused}` }]);
  if (await refusedEndpoint(url, receiverPolicy(app, principal))) {
    throw forbidden(
      'A receiver on a loopback, private or otherwise non-public address needs access to all data, as a source there does',
      {
        reason: 'private_receiver',
        field: 'sink.url',
      },
    );
  }
  if (input.type === 'nats') return { stored: { type: 'nats', url: input.url, subject: input.subject }, headers: {} };
  const headers = input.headers ?? {};
  const reserved = Object.keys(headers).find((name) =>
    /^(webhook-|content-type$|content-length$|host$|transfer-encoding$|connection$)/i.test(name),
  );
  if (reserved)
    throw validationFailed([
      { field: `sink.headers.${reserved}`, location: 'body', message: 'is set by cinv for every delivery' },
    ]);
  return { stored: { type: 'webhook', url: input.url, header_names: Object.keys(headers).sort() }, headers };
}
