import { saveBlob } from './api';

// a module of its own, without the browser's download plumbing, so that the server's tests load it too
export { csvText } from './csv-format';

/**
 * Every item an offset-paged list answers, `pageSize` at a time, up to `max` items: for exports
 * the API has no stream for. `progress` hears the count after each page.
 */
export async function allPages<T>(
  page: (offset: number, limit: number) => Promise<T[]>,
  pageSize: number,
  max: number,
  progress?: (items: number) => void,
): Promise<T[]> {
  const items: T[] = [];
  while (items.length < max) {
    const next = await page(items.length, Math.min(pageSize, max - items.length));
    items.push(...next);
    progress?.(items.length);
    if (next.length < pageSize) break;
  }
  return items;
}

/** CSV text as a download. */
export const saveCsv = (text: string, name: string): void => saveBlob(new Blob([text], { type: 'text/csv' }), name);

/** `inventory-20261123T101500Z.csv` */
export const exportName = (what: string, now = new Date()): string =>
  `${what}-${now
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:]/g, '')}.csv`;
