import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api';
import type { QueryVocabulary } from '../lib/api-shapes';
import {
  completions,
  splitPath,
  type Completion,
  type CompletionContext,
  type Vocabulary,
} from '../lib/query-completion';

/** The fields before the server has named them (the same list, so completion works at once). */
const FIELDS = [
  'ci_id',
  'name',
  'namespace',
  'ci_type',
  'status',
  'source_id',
  'scope_id',
  'external_id',
  'created_at',
  'updated_at',
  'status_updated_at',
  'last_seen',
  'raw_data',
  'type_data',
];
const EMPTY: Vocabulary = { ci_types: [], relationship_types: [], fields: FIELDS, paths: [] };
/** The server lists paths four levels below where it starts; deeper ones are asked below their parent. */
const LISTED_DEPTH = 4;

/** The request that answers a context's names: any type, one type, or the paths below a deep parent. */
function requestOf(context: CompletionContext): { key: string; query: Record<string, string> } {
  const query: Record<string, string> = {};
  if (context.ciType) query.ci_type = context.ciType;
  const { whole } = splitPath(context.word);
  if (whole.length > LISTED_DEPTH) query.prefix = context.word.slice(0, context.word.lastIndexOf('.') + 1);
  return { key: JSON.stringify(query), query };
}

function merged(base: Vocabulary, specific: Vocabulary | undefined): Vocabulary {
  if (!specific) return base;
  return {
    ci_types: base.ci_types.length > 0 ? base.ci_types : specific.ci_types,
    relationship_types: [...new Set([...specific.relationship_types, ...base.relationship_types])],
    fields: specific.fields,
    // a type's own paths first: those are what its CIs hold
    paths: [...new Set([...specific.paths, ...base.paths])],
  };
}

/**
 * The editor's completion over the server's vocabulary (GET /api/v1/query/vocabulary): asked once
 * for any type, then once per CI type a match names and per deep path typed, each answer kept for
 * the page's life. Until an answer arrives, completion offers what it already has.
 */
export function useQueryCompletion(): (context: CompletionContext) => Completion[] {
  const cache = useRef(new Map<string, Vocabulary | 'asking'>());
  const [, setAnswered] = useState(0);
  const ask = (key: string, query: Record<string, string>) => {
    if (cache.current.has(key)) return;
    cache.current.set(key, 'asking');
    api<QueryVocabulary>('/api/v1/query/vocabulary', { query }).then(
      (answer) => {
        cache.current.set(key, answer);
        setAnswered((n) => n + 1);
      },
      // completion goes on with the fixed names; the next page load asks again
      () => cache.current.set(key, EMPTY),
    );
  };
  // asked as the view opens, so the first word typed already completes from it
  useEffect(() => ask('{}', {}), []);
  return (context) => {
    ask('{}', {});
    const request = requestOf(context);
    if (request.key !== '{}') ask(request.key, request.query);
    const found = (key: string) => {
      const entry = cache.current.get(key);
      return entry === 'asking' ? undefined : entry;
    };
    return completions(context, merged(found('{}') ?? EMPTY, found(request.key)));
  };
}
