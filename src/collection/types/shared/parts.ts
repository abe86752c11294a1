import type { CollectContext } from '../plugin.js';

/** Whether `config.enabled_collectors` (empty or absent: everything) names this part. */
export function isEnabled(context: CollectContext, part: string): boolean {
  const wanted = context.source.config.enabled_collectors;
  return !Array.isArray(wanted) || wanted.length === 0 || wanted.includes(part);
}

/**
 * Loads one part of a collection; a failure is reported as that component's and yields
 * `undefined`, so the other parts go on. Records are yielded outside it, so that a failure to
 * write them is the run's, not the part's. An aborted run is not a part's failure.
 */
export async function loadPart<T>(
  context: CollectContext,
  name: string,
  load: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await load();
  } catch (error) {
    context.signal.throwIfAborted();
    context.component(name, error);
    return undefined;
  }
}
