import { useMemo } from 'preact/hooks';
import { api } from '../lib/api';
import type { Answer } from '../lib/api-shapes';
import { useLoad } from './states';

/** The sources the caller may see, by id, to name each row's origin; none without `sources:read`. */
export function useSourceNames() {
  const loaded = useLoad('inventory-sources', (signal) =>
    api<Answer<'listSources'>>('/api/v1/sources', { query: { limit: 500 }, signal }).catch(() => ({
      items: [],
    })),
  );
  return useMemo(() => new Map((loaded.data?.items ?? []).map((source) => [source.id, source.name])), [loaded.data]);
}
