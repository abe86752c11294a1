import type { Sql } from '../../platform/db/database.js';
import { recordJson, recordsAsJson, type RecordContent } from '../records/feed.js';

/** Records' texts kept for the other subscriptions: a few batches of each of them. */
const KEPT_TEXTS = 50_000;

/** Records' JSON texts lately written out, by record id. */
export class TextCache {
  private readonly texts = new Map<string, string>();

  /**
   * A record's JSON as scanned, from the texts kept for the subscriptions that read it before (every
   * subscription reads the same records near the same time: each is written out once).
   */
  textOf(content: RecordContent): string {
    let text = this.texts.get(content.id);
    if (text === undefined) this.keep(content.id, (text = recordJson(content)));
    return text;
  }

  /** The records' JSON by id and time, from the kept texts, the rest read again (a batch sent again later). */
  async jsonOf(sql: Sql, tenantId: string, records: { id: string; at: string }[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const missing = records.filter((record) => {
      const text = this.texts.get(record.id);
      if (text !== undefined) found.set(record.id, text);
      return text === undefined;
    });
    for (const [id, text] of await recordsAsJson(sql, tenantId, missing)) {
      found.set(id, text);
      this.keep(id, text);
    }
    return found;
  }

  private keep(id: string, text: string): void {
    this.texts.set(id, text);
    if (this.texts.size <= KEPT_TEXTS) return;
    // the oldest quarter goes at once (a Map keeps insertion order). One at a time, each removal
    // walked past every earlier one still held as a hole in the Map: a third of a drain's time.
    let drop = this.texts.size - Math.floor((KEPT_TEXTS * 3) / 4);
    for (const kept of this.texts.keys()) {
      if (drop-- <= 0) break;
      this.texts.delete(kept);
    }
  }
}
