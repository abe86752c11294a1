import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../lib/api';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads what `load` fetches whenever `key` changes; a newer load cancels the one in flight, so a
 * slow answer never overwrites a newer view.
 */
export function useLoad<T>(key: string | null, load: (signal: AbortSignal) => Promise<T>): Loaded<T> {
  // `settled` names the key and generation the data belongs to: the render that changes the key
  // is already a loading one, so no frame shows old rows as if they answered the new view
  const [state, setState] = useState<{ data?: T; error?: ApiError; settled?: string }>({});
  const [generation, setGeneration] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const current = `${generation}:${key}`;
  useEffect(() => {
    if (key === null) {
      setState({ settled: current });
      return undefined;
    }
    const controller = new AbortController();
    loadRef.current(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setState({ data, settled: current });
      },
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ error: asApiError(error), settled: current });
      },
    );
    return () => controller.abort();
  }, [current]);
  const loading = state.settled !== current;
  return {
    data: state.data,
    error: loading ? undefined : state.error,
    loading,
    reload: () => setGeneration((n) => n + 1),
  };
}

/** A user's action (a form's submit, a download) with its busy flag and the error to show. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError>();
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(asApiError(failure));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

export type Action = ReturnType<typeof useAction>;

export function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  return new ApiError(0, 'CLIENT', error instanceof Error ? error.message : String(error), undefined);
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="state loading" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="state empty">{children}</p>;
}

/** The field errors of a validation failure (`details.errors`), as the envelope lists them. */
function fieldErrors(error: ApiError): { field: string; message: string }[] {
  const errors = error.details.errors;
  if (!Array.isArray(errors)) return [];
  return errors
    .filter(
      (entry): entry is { field: string; message: string } =>
        typeof entry?.field === 'string' && typeof entry?.message === 'string',
    )
    .slice(0, 10);
}

/** Whether asking again can answer differently: the network, the server or its load, not the request itself. */
export const retryable = (error: ApiError) => error.status === 0 || error.status === 429 || error.status >= 500;

/** What a person reads first: the envelope's message, or for a 404 what it can mean. */
function headline(error: ApiError): string {
  if (error.status === 404) return `${error.message}: it does not exist, or it lies outside the data you may see.`;
  return error.message;
}

/**
 * An API error as the envelope gave it: the message (with each field's error of a validation
 * failure), the code, and the `error.id` to quote to an operator. "Try again" only where trying
 * again can help.
 */
export function ErrorBox({ error, retry }: { error: ApiError; retry?: () => void }) {
  const fields = fieldErrors(error);
  return (
    <div class="state error" role="alert">
      <strong>{headline(error)}</strong>
      {fields.length > 0 ? (
        <ul class="field-errors">
          {fields.map((entry) => (
            <li key={entry.field}>
              <code>{entry.field}</code> {entry.message}
            </li>
          ))}
        </ul>
      ) : null}
      <span class="meta">
        {error.status > 0 ? `${error.status} ${error.code}` : error.code}
        {error.id ? (
          <>
            {' · error id '}
            <code>{error.id}</code>
          </>
        ) : null}
      </span>
      {retry && retryable(error) ? (
        <button type="button" onClick={retry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

/** Loading, error or the content, for one load. */
export function Show<T>({
  loaded,
  what,
  children,
}: {
  loaded: Loaded<T>;
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  if (loaded.error) return <ErrorBox error={loaded.error} retry={loaded.reload} />;
  if (loaded.data === undefined) return <Loading what={what} />;
  return <div aria-busy={loaded.loading}>{children(loaded.data)}</div>;
}

/**
 * Previous / next with the range shown; the page is part of the URL. `next`, where given, moves on
 * by cursor instead of by offset.
 */
export function Pager(props: {
  offset: number;
  limit: number;
  shown: number;
  total?: number;
  exact?: boolean;
  hasMore?: boolean;
  go: (offset: number) => void;
  next?: () => void;
  label: string;
}) {
  const { offset, limit, shown, total, exact = true, go, label } = props;
  const hasMore = props.hasMore ?? (total !== undefined ? offset + shown < total : shown === limit);
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <span class="range" aria-live="polite">
        {shown === 0 ? 'No rows' : `${(offset + 1).toLocaleString('en')}–${(offset + shown).toLocaleString('en')}`}
        {total !== undefined ? ` of ${exact ? '' : 'about '}${total.toLocaleString('en')}` : ''}
      </span>
      <button type="button" disabled={offset === 0} onClick={() => go(Math.max(0, offset - limit))}>
        ← Previous
      </button>
      <button type="button" disabled={!hasMore} onClick={() => (props.next ? props.next() : go(offset + limit))}>
        Next →
      </button>
    </nav>
  );
}

/** A one-time secret (a new key or token): shown once, with a copy button. */
export function Secret({ value, onDone }: { value: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="secret" role="alert">
      <p>
        <strong>Copy this secret now: it is not shown again.</strong>
      </p>
      <code data-testid="secret">{value}</code>
      <div class="actions">
        <button
          type="button"
          onClick={() => {
            void navigator.clipboard?.writeText(value).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
