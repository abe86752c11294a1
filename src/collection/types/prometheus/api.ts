import type { CollectContext } from '../plugin.js';
import { guardedGet } from '../../../platform/net/guarded-http.js';

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface ActiveTarget {
  scrapePool: string;
  scrapeUrl: string;
  globalUrl?: string;
  labels: Record<string, string>;
  health: string;
  lastError: string;
  lastScrape: string;
  lastScrapeDuration: number;
  scrapeInterval?: string;
  scrapeTimeout?: string;
}

/** The server's HTTP API, with the source's credentials, through the request-forgery guard. */
export class PrometheusApi {
  private readonly headers: Record<string, string> = { accept: 'application/json' };

  constructor(
    private readonly base: string,
    private readonly context: CollectContext,
  ) {
    const credentials = context.credentials;
    if (credentials?.type === 'token') this.headers.authorization = `Bearer ${credentials.token}`;
    else if (credentials?.type === 'basic')
      this.headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    else if (credentials?.type === 'tls')
      throw new Error('prometheus sources take basic or token credentials, or none');
  }

  async get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.base);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const reply = await guardedGet(url.href, {
      allowedHosts: this.context.allowedHosts,
      signal: this.context.signal,
      headers: this.headers,
      verifyTls: this.context.source.config.verify_ssl !== false,
      maxBytes: 256 * 1024 * 1024,
    });
    if (reply.status !== 200) throw new Error(`${url.pathname} answered HTTP ${reply.status}`);
    const body = JSON.parse(reply.body.toString('utf8')) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${url.pathname}: ${body.error ?? 'the API answered an error'}`);
    return body.data;
  }

  async query(expression: string): Promise<Sample[]> {
    const data = await this.get<{ resultType: string; result: Sample[] }>('/api/v1/query', { query: expression });
    return data.resultType === 'vector' ? data.result : [];
  }
}
