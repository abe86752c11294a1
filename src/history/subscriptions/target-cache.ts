import type { AppContext } from '../../context.js';
import { targetOf } from './secrets.js';
import type { Target } from './sinks.js';
import type { SubscriptionRow } from './store.js';

/** Each subscription's decrypted target, as of its row's last seal (a rotation's overlap ending changes it too). */
export class TargetCache {
  private readonly targets = new Map<string, { version: string; target: Promise<Target> }>();

  targetFor(app: AppContext, row: SubscriptionRow): Promise<Target> {
    const rotating = row.previous_until !== null && row.previous_until > app.now();
    // every PUT and rotation seals anew, with a new nonce: it tells a changed target apart even within one millisecond
    const version = `${row.secret_nonce.toString('hex')}|${row.sink.url}|${rotating}`;
    const known = this.targets.get(row.id);
    if (known?.version === version) return known.target;
    const target = targetOf(app, row);
    target.catch(() => this.targets.delete(row.id));
    this.targets.set(row.id, { version, target });
    return target;
  }
}
