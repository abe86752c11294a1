import { saveBlob } from './api';

/** RFC 4180 CSV text, for downloads the browser assembles from API pages. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvText(header: readonly string[], rows: Iterable<readonly unknown[]>): string {
  const lines = [header.map(csvCell).join(',')];
  for (const row of rows) lines.push(row.map(csvCell).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * Every item an offset-paged list answers, `pageSize` at a time, up to `max` items: for exports
 * the API has no stream for. `progress` hears the count after each page.
 */
export async function allPages<T>(page: (offset: number, limit: number) => Promise<T[]>, pageSize: number, max: number, progress?: (items: number) => void): Promise<T[]> {
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
  `${what}-${now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '')}.csv`;
