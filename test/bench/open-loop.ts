/**
 * An open-loop load generator for the benchmarks that drive a `cinv serve` process: requests leave
 * at a fixed rate whatever the answers, as independent clients send them, so that a slow server
 * meets a growing backlog instead of a politely waiting client. Bodies are read and dropped as
 * they arrive (a CSV export is not held in the generator's memory); only a 503's envelope is kept,
 * for its `details.reason`.
 */
import { Agent, request } from 'node:http';

/** One request to send. */
export interface Shot {
  kind: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Sample {
  /** When it was sent, in ms from the start of the run. */
  at: number;
  ms: number;
  /** 0: no answer (connection failed, or still open when the run ended). */
  status: number;
  kind: string;
  /** `details.reason` of a 503. */
  reason?: string;
  bytes: number;
}

export interface OpenLoopOptions {
  /** Requests per second. */
  rate: number;
  /** How many to send in all; unbounded until `stop()` when left out. */
  count?: number;
  /** Sent with every request (the API key). */
  headers?: Record<string, string>;
  pick(i: number): Shot;
}

export interface OpenLoop {
  samples: Sample[];
  started: number;
  /** Requests sent and not answered yet. */
  inFlight(): number;
  /** Resolves once `count` requests have been sent. */
  sent: Promise<void>;
  /** Stops sending; waits at most `drainMs` for the open answers, then abandons them (status 0). */
  stop(drainMs?: number): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function openLoop(base: string, options: OpenLoopOptions): OpenLoop {
  const url = new URL(base);
  // the generator is meant for a server of its own on this machine, never for someone else's
  if (!LOOPBACK.has(url.hostname))
    throw new Error(`the open-loop generator drives loopback servers only, not ${url.hostname}`);
  // a connection per request, as independent clients have: a kept-alive socket the server closes
  // while a request is being put on it would fail that request for the generator's sake
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  const samples: Sample[] = [];
  const open = new Map<number, () => void>();
  const started = performance.now();
  let i = 0;
  let sentAll!: () => void;
  const sent = new Promise<void>((resolve) => (sentAll = resolve));

  const fire = (n: number) => {
    const shot = options.pick(n);
    const at = performance.now();
    let done = false;
    const record = (status: number, bytes: number, reason?: string) => {
      if (done) return;
      done = true;
      open.delete(n);
      samples.push({ at: at - started, ms: performance.now() - at, status, kind: shot.kind, reason, bytes });
    };
    const outgoing = request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port,
        path: shot.path,
        method: shot.method,
        agent,
        headers: { ...options.headers, ...shot.headers },
      },
      (incoming) => {
        const status = incoming.statusCode ?? 0;
        let bytes = 0;
        let kept = '';
        incoming.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (status === 503 && kept.length < 4096) kept += chunk.toString('utf8');
        });
        incoming.on('end', () => {
          let reason: string | undefined;
          if (status === 503) {
            try {
              reason = (JSON.parse(kept) as { error?: { details?: { reason?: string } } }).error?.details?.reason;
            } catch {
              reason = 'unparsed';
            }
          }
          record(status, bytes, reason);
        });
        incoming.on('error', () => record(0, bytes));
      },
    );
    outgoing.on('error', () => record(0, 0));
    open.set(n, () => {
      outgoing.destroy();
      record(0, 0);
    });
    outgoing.end(shot.body);
  };

  const timer = setInterval(() => {
    let due = Math.floor(((performance.now() - started) / 1000) * options.rate);
    if (options.count !== undefined) due = Math.min(due, options.count);
    for (; i < due; i++) fire(i);
    if (options.count !== undefined && i >= options.count) {
      clearInterval(timer);
      sentAll();
    }
  }, 5);

  return {
    samples,
    started,
    sent,
    inFlight: () => open.size,
    async stop(drainMs = 120_000) {
      clearInterval(timer);
      sentAll();
      for (const until = performance.now() + drainMs; open.size > 0 && performance.now() < until;) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      for (const abandon of [...open.values()]) abandon();
      agent.destroy();
    },
  };
}

export const percentile = (values: number[], p: number): number => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** One line: count, p50/p99/max of the answer times, and how many of each status. */
export function summarize(label: string, samples: Pick<Sample, 'ms' | 'status'>[]): void {
  const statuses = new Map<number, number>();
  for (const s of samples) statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1);
  const ms = samples.map((s) => s.ms);
  console.log(
    `${label.padEnd(26)} ${String(samples.length).padStart(6)} requests  ` +
      `p50 ${percentile(ms, 50).toFixed(0).padStart(5)} ms  p99 ${percentile(ms, 99).toFixed(0).padStart(5)} ms  ` +
      `max ${ms
        .reduce((a, b) => Math.max(a, b), 0)
        .toFixed(0)
        .padStart(5)} ms  statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
  );
}
