import { useEffect, useState } from 'preact/hooks';
import { asApiError } from './states';

/** What the walk reads of a page: every cursor-paged answer of the API has it (`total` where the walk counts). */
export interface CursorPage<T> {
  items: T[];
  total?: number;
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * Walks a cursor-paged list: the first page when `key` changes, the next when asked (`more`), each
 * page appended; the first page is kept whole (`first`), for what only it carries (totals, counts).
 */
export function useCursorWalk<T, P extends CursorPage<T> = CursorPage<T>>(
  key: string,
  load: (cursor: string | undefined, signal: AbortSignal) => Promise<P>,
) {
  const [state, setState] = useState<{
    items: T[];
    first?: P;
    next?: string | null;
    busy: boolean;
    error?: ReturnType<typeof asApiError>;
  }>({ items: [], busy: true });
  const [request, setRequest] = useState<{ key: string; cursor?: string }>({ key });
  useEffect(() => {
    // the first page of the key the walk began with is asked already: asking again would load it twice
    if (request.key === key && request.cursor === undefined) return;
    setState({ items: [], busy: true });
    setRequest({ key });
  }, [key]);
  useEffect(() => {
    const controller = new AbortController();
    load(request.cursor, controller.signal).then(
      (page) => {
        if (controller.signal.aborted) return;
        setState((previous) => ({
          items: request.cursor ? [...previous.items, ...page.items] : page.items,
          first: request.cursor ? previous.first : page,
          next: page.has_more ? page.next_cursor : null,
          busy: false,
        }));
      },
      (error: unknown) => {
        if (!controller.signal.aborted)
          setState((previous) => ({ ...previous, busy: false, error: asApiError(error) }));
      },
    );
    return () => controller.abort();
  }, [request]);
  const more = () => {
    if (state.busy || !state.next) return;
    setState((previous) => ({ ...previous, busy: true }));
    setRequest({ key, cursor: state.next });
  };
  return { ...state, total: state.first?.total, more };
}
