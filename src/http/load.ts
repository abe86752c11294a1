import type { Context, Next } from 'koa';
import { requestsShed } from '../observability/metrics.js';
import { unavailable } from './errors.js';
import { renderError } from './error-middleware.js';

/** Paths a load balancer and Prometheus must reach however busy the process is. */
const ALWAYS_SERVED = new Set(['/health', '/health/ready', '/metrics']);

export const isAlwaysServed = (path: string): boolean => ALWAYS_SERVED.has(path);

/**
 * Bounds the requests this process works on at once. Beyond the bound a request is answered 503
 * with `Retry-After` at once, instead of queueing behind the others for tens of seconds: a client
 * or load balancer can send it elsewhere or retry, and the admitted requests keep their latency.
 * A request counts until its response is fully sent (streamed exports included).
 */
export class LoadShedder {
  private current = 0;

  constructor(readonly maxInFlight: number) {}

  get inFlight(): number {
    return this.current;
  }

  get saturated(): boolean {
    return this.current >= this.maxInFlight;
  }

  middleware() {
    return async (ctx: Context, next: Next): Promise<void> => {
      if (isAlwaysServed(ctx.path)) return next();
      if (this.current >= this.maxInFlight) {
        requestsShed.inc();
        renderError(ctx, unavailable('The server is at capacity; retry shortly', 'overloaded', 1));
        return;
      }
      this.current++;
      let counted = true;
      const done = () => {
        if (!counted) return;
        counted = false;
        this.current--;
      };
      ctx.res.once('close', done);
      try {
        await next();
      } finally {
        // a response that was never sent (the client left first) still ends the count
        if (ctx.res.writableEnded || ctx.res.destroyed) done();
      }
    };
  }
}
