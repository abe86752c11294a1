import { createHash } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { can } from '../../platform/auth/principal.js';
import type { Queryable } from '../../platform/db/database.js';
import { scoresOf } from '../../inventory/quality/service.js';
import { ownerPrincipal } from './access.js';
import { logFailure } from './messages.js';
import { sendOptionsOf } from './receivers.js';
import { targetOf } from './secrets.js';
import { send, type NatsConnections } from './sinks.js';
import { SUBSCRIPTION_COLUMNS, type SubscriptionRow } from './store.js';

interface Told {
  measure: string;
  below: boolean;
  score: number;
}

export interface QualityAlert {
  measure: string;
  state: 'below' | 'recovered';
  score: number;
  threshold: number;
  previous_score: number | null;
}

async function alerting(sql: Queryable): Promise<SubscriptionRow[]> {
  return sql.unsafe<SubscriptionRow[]>(
    `select ${SUBSCRIPTION_COLUMNS} from subscriptions
     where quality_alerts and enabled and state in ('active', 'failing') order by id`,
  ) as unknown as Promise<SubscriptionRow[]>;
}

/**
 * What changed since the subscription was last told: each score (overall and per measure, null
 * ones aside) that crossed the threshold, below or back above. A score never told counts as above.
 */
export function crossings(
  scores: Record<string, number | null>,
  told: readonly Told[],
  threshold: number,
): QualityAlert[] {
  const before = new Map(told.map((t) => [t.measure, t]));
  return Object.entries(scores).flatMap(([measure, score]) => {
    if (score === null) return [];
    const below = score < threshold;
    const last = before.get(measure);
    if (below === (last?.below ?? false)) return [];
    return [{ measure, state: below ? 'below' : 'recovered', score, threshold, previous_score: last?.score ?? null }];
  });
}

export const qualityMessageBody = (now: Date, subscriptionId: string, alerts: readonly QualityAlert[]) =>
  JSON.stringify({
    type: 'cinv.quality',
    timestamp: now.toISOString(),
    data: { subscription_id: subscriptionId, alerts },
  });

/**
 * Tells every subscription that asks for quality alerts (`quality_alerts`) what crossed its
 * tenant's threshold since it was last told, as its owner sees the scores; one `cinv.quality`
 * message each, signed as change batches are. What a receiver took is remembered; what it did not
 * is sent again on the next round (the same message id while the crossing is the same). An owner
 * that may no longer read CIs is told nothing.
 */
export async function deliverQualityAlerts(app: AppContext, nats: NatsConnections): Promise<number> {
  let sent = 0;
  for (const row of await alerting(app.sql)) {
    const owner = await ownerPrincipal(app, row);
    if (!owner || !can(owner, 'configuration_items', 'read')) continue;
    const { figures, threshold } = await scoresOf(app, owner);
    const scores: Record<string, number | null> = { overall: figures.score };
    for (const [measure, figure] of Object.entries(figures.measures)) scores[measure] = figure.score;
    const told = await app.sql<Told[]>`
      select measure, below, score from subscription_quality_states where subscription_id = ${row.id}`;
    const alerts = crossings(scores, told, threshold);
    if (alerts.length === 0) continue;
    const crossing = alerts.map((a) => `${a.measure}:${a.state}:${a.previous_score ?? ''}`).join(',');
    const messageId = `msg_quality_${row.id.replace(/-/g, '')}_${createHash('sha256').update(crossing).digest('hex').slice(0, 16)}`;
    const now = app.now();
    const result = await send(
      await targetOf(app, row),
      { messageId, body: qualityMessageBody(now, row.id, alerts) },
      sendOptionsOf(app, owner),
      nats,
    );
    if (!result.ok) {
      logFailure(app, row, result, { quality: 'true' });
      continue;
    }
    sent++;
    for (const alert of alerts)
      await app.sql`
        insert into subscription_quality_states (subscription_id, measure, below, score, told_at)
        values (${row.id}, ${alert.measure}, ${alert.state === 'below'}, ${alert.score}, ${now})
        on conflict (subscription_id, measure) do update set below = excluded.below, score = excluded.score, told_at = excluded.told_at`;
  }
  return sent;
}
