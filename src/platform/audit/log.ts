import type { Context } from 'koa';
import type { Principal } from '../auth/principal.js';
import type { Queryable, Sql } from '../db/database.js';
import type { Logger } from '../observability/logger.js';
import { insertAuditEvents, type AuditRow } from './store.js';

export const AUDIT_EVENT_TYPES = [
  'auth.succeeded',
  'auth.failed',
  'api_key.created',
  'api_key.revoked',
  'token.created',
  'token.revoked',
  'permission.denied',
  'credentials.revealed',
  'credentials.reveal_denied',
  'user.created',
  'user.deactivated',
  'user.reactivated',
  'user.promoted',
  'grant.changed',
  'membership.changed',
  'subscription.created',
  'subscription.changed',
  'subscription.deleted',
  'subscription.secret_rotated',
  'identity.decided',
  'identity.decision_undone',
  'identity.rules_changed',
  'quality.settings_changed',
  'quality.rule_created',
  'quality.rule_changed',
  'quality.rule_deleted',
  'change_rule.created',
  'change_rule.changed',
  'change_rule.deleted',
  'change_rule.applied',
  'change_settings.changed',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

export interface AuditActor {
  kind: 'api_key' | 'user' | 'anonymous' | 'system';
  id: string | null;
  name: string | null;
}

export interface AuditEvent {
  tenantId: string;
  type: AuditEventType;
  outcome: 'success' | 'failure';
  actor: AuditActor;
  target?: { type: string; id: string; name?: string | null };
  clientAddress?: string | null;
  userAgent?: string | null;
  requestId?: string | null;
  details?: Record<string, unknown>;
}

/** Rows buffered beyond this are written at once rather than at the next tick. */
const FLUSH_AT_ROWS = 500;
/** Buffered rows beyond this while the database cannot take them are dropped, oldest first, and said so. */
const MAX_BUFFERED = 50_000;
/** auth.succeeded is written once per credential and client address in this window. */
const SUCCESS_WINDOW_MS = 5 * 60_000;

export function actorOf(principal: Principal): AuditActor {
  if (principal.user) return { kind: 'user', id: principal.user.id, name: principal.user.name };
  return { kind: principal.kind, id: principal.id, name: principal.name };
}

/** The request's side of an event: who, from where, with what. */
export function requestFacts(ctx: Context): Pick<AuditEvent, 'clientAddress' | 'userAgent'> {
  const agent = ctx.get('user-agent');
  return { clientAddress: ctx.ip || null, userAgent: agent ? agent.slice(0, 512) : null };
}

/**
 * The security audit log. Requests never wait on it: events are buffered and written in batches,
 * at least once a second and whenever the buffer fills, and `close()` writes what is left (graceful
 * shutdown). A write that fails is retried with the next batch; only an outage long enough to fill
 * the buffer loses rows, and the log says how many.
 */
export class AuditLog {
  private buffer: AuditRow[] = [];
  private flushing: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly recentSuccesses = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger,
    private readonly now: () => Date,
    flushEveryMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  record(event: AuditEvent): void {
    if (this.closed) {
      this.logger.warn({ event_type: event.type }, 'audit event after shutdown was not recorded');
      return;
    }
    this.buffer.push(toRow(event, this.now()));
    if (this.buffer.length > MAX_BUFFERED) {
      const dropped = this.buffer.splice(0, this.buffer.length - MAX_BUFFERED).length;
      this.logger.error({ dropped }, 'audit events dropped: the database has not taken them for too long');
    }
    if (this.buffer.length >= FLUSH_AT_ROWS) void this.flush();
  }

  /**
   * Writes an event now with the given handle rather than buffering it. Given a transaction, the
   * event commits or rolls back with the change it records, so a crash can lose neither alone.
   */
  async writeNow(sql: Queryable, event: AuditEvent): Promise<void> {
    await insertAuditEvents(sql, [toRow(event, this.now())]);
  }

  /**
   * A successful authentication, at most once per credential and client address in five minutes:
   * enough to answer "who used this key, from where, when" without a row per request.
   */
  authenticated(principal: Principal, ctx: Context, method: 'api_key' | 'user_token' | 'session'): void {
    const credential = principal.keyId ?? `session:${principal.user?.id ?? principal.id}`;
    const key = `${credential}\u0000${ctx.ip}`;
    const at = this.now().getTime();
    const last = this.recentSuccesses.get(key);
    if (last !== undefined && at - last < SUCCESS_WINDOW_MS) return;
    if (this.recentSuccesses.size >= 20_000) this.forgetOldSuccesses(at);
    this.recentSuccesses.set(key, at);
    this.record({
      tenantId: principal.tenantId,
      type: 'auth.succeeded',
      outcome: 'success',
      actor: actorOf(principal),
      details: { method, ...(principal.keyId ? { key_id: principal.keyId } : {}) },
      ...requestFacts(ctx),
    });
  }

  private forgetOldSuccesses(at: number): void {
    for (const [key, when] of this.recentSuccesses)
      if (at - when >= SUCCESS_WINDOW_MS) this.recentSuccesses.delete(key);
    if (this.recentSuccesses.size >= 20_000) this.recentSuccesses.clear();
  }

  /** Writes what is buffered; concurrent calls share one write. */
  flush(): Promise<void> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async write(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.slice(0, 1000);
      try {
        await insertAuditEvents(this.sql, batch);
      } catch (error) {
        this.logger.warn({ err: error, pending: this.buffer.length }, 'audit events not written yet; retrying');
        return;
      }
      this.buffer.splice(0, batch.length);
    }
  }

  /** Stops the timer and writes everything still buffered. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    if (this.buffer.length > 0) await this.flush();
    this.closed = true;
    if (this.buffer.length > 0)
      this.logger.error({ lost: this.buffer.length }, 'audit events could not be written before shutdown');
  }
}

function toRow(event: AuditEvent, at: Date): AuditRow {
  return {
    tenant_id: event.tenantId,
    occurred_at: at.toISOString(),
    event_type: event.type,
    outcome: event.outcome,
    actor_kind: event.actor.kind,
    actor_id: event.actor.id,
    actor_name: event.actor.name,
    target_type: event.target?.type ?? null,
    target_id: event.target?.id ?? null,
    target_name: event.target?.name ?? null,
    client_address: event.clientAddress ?? null,
    user_agent: event.userAgent ?? null,
    request_id: event.requestId ?? null,
    details: event.details ?? {},
  };
}

/** Why an authentication failed, set by whoever refused it for the audit row. */
export interface AuthFailure {
  reason:
    | 'missing_credentials'
    | 'malformed_key'
    | 'unknown_revoked_or_expired'
    | 'session_expired'
    | 'user_deactivated'
    | 'sso_failed'
    | 'email_taken';
  /** The key's public hint (tier prefix and last characters), never more of it. */
  keyHint?: string;
  tenantId?: string;
}

/**
 * Refusals worth auditing, from the rendered error: a failed authentication (401) and a missing
 * permission (403), each with the `error.id` the client was given.
 */
export function auditRefusal(
  audit: AuditLog,
  defaultTenantId: string,
  ctx: Context,
  status: number,
  details: Record<string, unknown>,
  id: string,
): void {
  const facts = { ...requestFacts(ctx), requestId: id };
  const route = `${ctx.method} ${(ctx.state.route as string | undefined) ?? ctx.path}`;
  const refusedSignIn = ctx.state.authFailure as AuthFailure | undefined;
  if (status === 401 || refusedSignIn) {
    const failure = refusedSignIn ?? { reason: 'missing_credentials' };
    // a browser asking whether it is signed in, without presenting anything (see RouteDefinition.probe)
    if (failure.reason === 'missing_credentials' && ctx.state.probe === true) return;
    audit.record({
      tenantId: failure.tenantId ?? defaultTenantId,
      type: 'auth.failed',
      outcome: 'failure',
      actor: { kind: 'anonymous', id: null, name: null },
      details: { reason: failure.reason, route, ...(failure.keyHint ? { key_hint: failure.keyHint } : {}) },
      ...facts,
    });
  } else if (status === 403) {
    const principal = ctx.state.principal as Principal | undefined;
    if (!principal) return;
    audit.record({
      tenantId: principal.tenantId,
      type: (ctx.state.deniedEvent as AuditEventType | undefined) ?? 'permission.denied',
      outcome: 'failure',
      actor: actorOf(principal),
      target: ctx.state.deniedTarget as AuditEvent['target'],
      details: { route, ...pick(details, ['resource', 'action', 'reason', 'subject', 'exceeding']) },
      ...facts,
    });
  }
}

function pick(from: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]]));
}

/**
 * Records a change of rights or credentials (a key or token issued or revoked, a grant, a scope, a
 * membership, a user deactivated) in the transaction that makes the change.
 */
export async function auditChange(
  sql: Queryable,
  audit: AuditLog,
  ctx: Context,
  principal: Principal,
  type: AuditEventType,
  target: { type: string; id: string; name?: string | null },
  details: Record<string, unknown> = {},
): Promise<void> {
  await audit.writeNow(sql, {
    tenantId: principal.tenantId,
    type,
    outcome: 'success',
    actor: actorOf(principal),
    target,
    details,
    ...requestFacts(ctx),
  });
}
