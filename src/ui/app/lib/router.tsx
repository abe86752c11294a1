import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * Every view is a URL: the path names the view, the query string holds its state (filters, sort,
 * page, query, window), so views can be bookmarked and shared and back/forward walk through them.
 */

export const BASE = '/ui';
const CHANGED = 'cinv:navigate';

export interface Place {
  path: string;
  params: URLSearchParams;
  /**
   * When the navigation that made this place happened (epoch ms): a relative window (`range=24h`)
   * is resolved against it, so that it moves with the user's actions and not with every render.
   */
  at: number;
}

function here(): Place {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
  return { path, params: new URLSearchParams(location.search), at: Date.now() };
}

export function useLocation(): Place {
  const [place, setPlace] = useState(here);
  useEffect(() => {
    const update = () => setPlace(here());
    addEventListener('popstate', update);
    addEventListener(CHANGED, update);
    return () => {
      removeEventListener('popstate', update);
      removeEventListener(CHANGED, update);
    };
  }, []);
  return place;
}

/** Goes to a path under /ui (with its query string). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const url = to.startsWith(BASE) ? to : BASE + to;
  if (url === location.pathname + location.search) return;
  if (options.replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new Event(CHANGED));
}

/**
 * The current view's query string with some parameters replaced (undefined or '' removes one).
 * A cursor belongs to the page it was issued for: moving `offset` without naming a cursor drops it.
 */
export function withParams(
  params: URLSearchParams,
  changes: Record<string, string | readonly string[] | undefined>,
): string {
  const next = new URLSearchParams(params);
  if ('offset' in changes && !('cursor' in changes)) next.delete('cursor');
  for (const [name, value] of Object.entries(changes)) {
    next.delete(name);
    for (const item of Array.isArray(value) ? value : [value])
      if (item !== undefined && item !== '') next.append(name, item as string);
  }
  const text = next.toString();
  return text ? `?${text}` : '';
}

/** Replaces query parameters of the current view, as a new history entry. */
export function setParams(
  changes: Record<string, string | readonly string[] | undefined>,
  options: { replace?: boolean } = {},
): void {
  const { path, params } = here();
  navigate(path + withParams(params, changes), options);
}

/** The page of an offset-paged view: `limit` (50 unless given) and `offset` from its URL. */
export function pageOf(params: URLSearchParams): { limit: number; offset: number } {
  return { limit: Number(params.get('limit') ?? 50) || 50, offset: Number(params.get('offset') ?? 0) || 0 };
}

/** Moves an offset-paged view to another page; the first page leaves `offset` out of the URL. */
export function goToOffset(offset: number): void {
  setParams({ offset: offset ? String(offset) : undefined });
}

export function currentRelative(): string {
  const { path, params } = here();
  const search = params.toString();
  return path + (search ? `?${search}` : '');
}

type LinkProps = Omit<JSX.HTMLAttributes<HTMLAnchorElement>, 'href'> & { href: string; children?: ComponentChildren };

/** An anchor that moves inside the app without a reload (a modified click still opens a new tab). */
export function Link({ href, children, ...rest }: LinkProps) {
  const url = href.startsWith(BASE) ? href : BASE + href;
  return (
    <a
      {...rest}
      href={url}
      onClick={(event) => {
        if (
          event.defaultPrevented ||
          event.button !== 0 ||
          event.metaKey ||
          event.ctrlKey ||
          event.shiftKey ||
          event.altKey
        )
          return;
        event.preventDefault();
        navigate(url);
      }}
    >
      {children}
    </a>
  );
}
