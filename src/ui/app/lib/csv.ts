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

/** `inventory-20261123T101500Z.csv` */
export const exportName = (what: string, now = new Date()): string =>
  `${what}-${now.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '')}.csv`;
