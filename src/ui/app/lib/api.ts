/**
 * The web interface's only way to the server: the public API, with the session cookie. Errors
 * arrive as the API's envelope and are shown with their message and `error.id`; a 401 sends the
 * person to sign in and back to where they were.
 */
import type { ErrorEnvelope, Me } from './api-shapes';

/** Who the session acts as; the shell and the views are handed it. */
export type { Me };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly id: string | undefined,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

type Scalar = string | number | boolean | undefined | null;
export type QueryValue = Scalar | readonly Scalar[];

/** `?a=1&b=x&b=y`, leaving out empty values. */
export function queryString(params: Record<string, QueryValue>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === undefined || item === null || item === '') continue;
      search.append(name, String(item));
    }
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

let onUnauthorized: () => void = () => undefined;

/** What to do when the session is gone (set once by the shell). */
export function whenUnauthorized(handler: () => void): void {
  onUnauthorized = handler;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, QueryValue>;
  accept?: string;
  signal?: AbortSignal;
  /** Sign-in calls handle their own 401. */
  quiet401?: boolean;
}

async function send(path: string, options: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: options.accept ?? 'application/json' };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path + queryString(options.query ?? {}), {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: 'same-origin',
      signal: options.signal,
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached; check the connection and try again', undefined);
  }
  if (response.ok) return response;
  let envelope: { error?: Partial<ErrorEnvelope['error']> } = {};
  try {
    envelope = (await response.json()) as typeof envelope;
  } catch {
    // a proxy's page, not the API's envelope
  }
  const error = new ApiError(
    response.status,
    envelope.error?.code ?? `HTTP_${response.status}`,
    envelope.error?.message ?? response.statusText ?? 'Request failed',
    envelope.error?.id,
    envelope.error?.details ?? {},
  );
  if (response.status === 401 && !options.quiet401) onUnauthorized();
  throw error;
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const response = await send(path, options);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/** A download of what a route streams (CSV), saved under the name the server gives it. */
export async function download(path: string, options: RequestOptions, fallbackName: string): Promise<void> {
  const response = await send(path, options);
  const disposition = response.headers.get('content-disposition') ?? '';
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? fallbackName;
  saveBlob(await response.blob(), name);
}

export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export const can = (me: Me | undefined, permission: string): boolean =>
  !!me && (me.superadmin || me.permissions.includes(permission));
