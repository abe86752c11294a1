import type { AppContext } from '../../context.js';
import type { Principal } from '../../platform/auth/principal.js';
import { conflict, notFound } from '../../platform/errors.js';
import { bigintId } from '../../platform/http/schemas.js';
import { listDeliveries, redeliver, type DeliveryLogRow } from './batch-store.js';
import type { DeliveryQuery } from './schema.js';
import { subscriptionOf } from './service.js';

export async function deliveriesOf(
  app: AppContext,
  principal: Principal,
  id: string,
  query: DeliveryQuery,
): Promise<{ rows: DeliveryLogRow[]; nextCursor: string | null }> {
  await subscriptionOf(app, principal, id);
  // a cursor beyond any id continues from the newest
  const before = query.cursor === undefined ? undefined : (bigintId(query.cursor) ?? '9223372036854775807');
  const rows = await listDeliveries(app.sql, principal.tenantId, id, {
    limit: query.limit,
    before,
    status: query.status,
  });
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { rows: page, nextCursor: more ? page[page.length - 1]!.id : null };
}

/** Sends a batch again; only one cut for the subscription's present owner (a 409 for another's). */
export async function redeliverBatch(
  app: AppContext,
  principal: Principal,
  id: string,
  deliveryId: string,
): Promise<DeliveryLogRow> {
  const notThere = () => notFound('Delivery not found', { subscription_id: id, delivery_id: deliveryId });
  const canonical = bigintId(deliveryId);
  if (canonical === undefined) throw notThere();
  await subscriptionOf(app, principal, id);
  const row = await redeliver(app.sql, principal.tenantId, id, canonical, app.now());
  if (row === undefined) throw notThere();
  if (row === 'other_owner') {
    throw conflict(
      "This batch was cut for a previous owner of the subscription, with that owner's rights: it is not sent again",
      {
        reason: 'other_owner',
        delivery_id: deliveryId,
      },
    );
  }
  return row;
}
