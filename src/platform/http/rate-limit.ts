import { Redis } from 'ioredis';
import type { Context } from 'koa';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Config, RateLimitOverride } from '../config/config.js';
import type { Logger } from '../observability/logger.js';
import { AppError } from '../errors.js';

interface Profile {
  name: string;
  /** Requests per minute: the refill rate, reported as X-RateLimit-Limit. */
  limit: number;
  burst: number;
  limiter: RateLimiterAbstract;
}

export interface RateLimitState {
  backend: 'redis' | 'memory';
  /** `degraded` while Redis is configured but unreachable: limits then hold per process. */
  status: 'ok' | 'degraded';
  detail?: string;
}

/**
 * Request limits per credential (spec section 8), with rate-limiter-flexible. A credential may
 * make `burst` requests at once; its allowance comes back in full every `burst / limit` minutes
 * (a window per credential, which is how the library counts: with the defaults, 100 requests per
 * minute). Paths may have their own limits (CINV_RATE_LIMIT_OVERRIDES), each with its own
 * allowance. With REDIS_URL every replica counts in Redis; while Redis cannot be reached each
 * process counts alone (the library's insurance limiter), which is logged and shown by
 * `/health/ready`; requests never fail because of it.
 */
export class RateLimits {
  private readonly general: Profile;
  private readonly interactive: Profile;
  private readonly overrides: { rule: RateLimitOverride; profile: Profile }[];
  private readonly redis: Redis | undefined;
  private redisDown: string | undefined;
  private warned = false;

  constructor(
    config: Pick<
      Config,
      'rateLimit' | 'rateBurst' | 'sessionRateLimit' | 'sessionRateBurst' | 'rateLimitOverrides' | 'redisUrl'
    >,
    private readonly logger: Logger,
  ) {
    if (config.redisUrl) {
      this.redis = new Redis(config.redisUrl, {
        // a request must not wait for Redis to come back: commands fail at once and the
        // in-process limiter answers instead
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        connectTimeout: 2000,
        retryStrategy: (attempt) => Math.min(attempt * 200, 5000),
        lazyConnect: false,
      });
      this.redisDown = 'connecting';
      this.redis.on('ready', () => {
        if (this.warned) this.logger.info('Redis is back: rate limits are shared again');
        this.warned = false;
        this.redisDown = undefined;
      });
      this.redis.on('error', (error: Error) => {
        // once per outage, not once per reconnection attempt
        if (!this.warned)
          this.logger.warn(
            { err: { message: error.message } },
            'Redis unreachable: rate limits hold per process until it is back',
          );
        this.warned = true;
        this.redisDown = error.message || 'unreachable';
      });
      this.redis.on('end', () => {
        this.redisDown ??= 'connection closed';
      });
    }
    this.general = this.profile('all', config.rateLimit, config.rateBurst);
    this.interactive = this.profile('session', config.sessionRateLimit, config.sessionRateBurst);
    this.overrides = config.rateLimitOverrides.map((rule, i) => ({
      rule,
      profile: this.profile(`o${i}`, rule.limit, rule.burst),
    }));
  }

  private profile(name: string, limit: number, burst: number): Profile {
    const duration = Math.max(1, Math.ceil((burst * 60) / limit));
    const options = { points: burst, duration, keyPrefix: `cinv:rl:${name}` };
    const memory = new RateLimiterMemory(options);
    const limiter = this.redis
      ? new RateLimiterRedis({
          ...options,
          storeClient: this.redis,
          rejectIfRedisNotReady: true,
          insuranceLimiter: memory,
        })
      : memory;
    return { name, limit, burst, limiter };
  }

  state(): RateLimitState {
    if (!this.redis) return { backend: 'memory', status: 'ok' };
    return this.redisDown
      ? { backend: 'redis', status: 'degraded', detail: `per-process limits: ${this.redisDown}` }
      : { backend: 'redis', status: 'ok' };
  }

  private profileFor(method: string, path: string, interactive: boolean): Profile {
    const match = this.overrides.find(
      ({ rule }) => path.startsWith(rule.prefix) && (rule.method === undefined || rule.method === method),
    );
    return match?.profile ?? (interactive ? this.interactive : this.general);
  }

  /**
   * Counts one request of `who` (a credential, or `ip:<address>` for requests without valid
   * credentials); sets the X-RateLimit headers, or throws the 429. `interactive` requests (a
   * signed-in browser's) count against the session allowance, under a key of their own.
   */
  async consume(ctx: Context, who: string, interactive = false): Promise<void> {
    const profile = this.profileFor(ctx.method, ctx.path, interactive);
    let result: RateLimiterRes;
    let refused = false;
    try {
      result = await profile.limiter.consume(who);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        // neither Redis nor the insurance answered: let the request through rather than fail it
        this.logger.warn({ err: rejection }, 'rate limit could not be checked');
        return;
      }
      result = rejection;
      refused = true;
    }
    const now = Date.now();
    ctx.set('X-RateLimit-Limit', String(profile.limit));
    ctx.set('X-RateLimit-Remaining', String(Math.max(0, result.remainingPoints)));
    ctx.set('X-RateLimit-Reset', String(Math.ceil((now + result.msBeforeNext) / 1000)));
    if (refused) {
      const retryAfter = Math.max(1, Math.ceil(result.msBeforeNext / 1000));
      throw new AppError(
        429,
        'HTTP_429',
        `Rate limit exceeded: ${profile.burst} requests at most, ${profile.limit} per minute; retry in ${retryAfter} s`,
        { limit: profile.limit, burst: profile.burst, retry_after: retryAfter },
        { 'Retry-After': String(retryAfter) },
      );
    }
  }

  async close(): Promise<void> {
    if (this.redis) this.redis.disconnect();
  }
}
