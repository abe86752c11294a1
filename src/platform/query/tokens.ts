/**
 * How text is cut into search tokens, the same way on both sides: for the documents a change record
 * is found by (src/history/records/document.ts) and for the terms of a search query (text-query.ts).
 */

/** Whole tokens up to this length are kept; the query side refuses longer terms with no parts. */
export const MAX_WHOLE_TOKEN = 200;
export const MAX_PART_TOKEN = 100;

const PART = /[\p{L}\p{N}]+/gu;

/** The alphanumeric runs of a lowercased text that are short enough to be tokens. */
export function partsOf(lower: string): string[] {
  return (lower.match(PART) ?? []).filter((part) => part.length <= MAX_PART_TOKEN);
}

/** A text's tokens: itself lowercased (so `db-1.prod.example` is one), and its alphanumeric parts. */
export function splitTokens(text: string): string[] {
  const whole = text.toLowerCase();
  return whole.length <= MAX_WHOLE_TOKEN ? [whole, ...partsOf(whole)] : partsOf(whole);
}

/** A field path's tokens: the whole path and its dot-separated segments. */
export function pathTokens(path: string): string[] {
  const whole = path.toLowerCase();
  const tokens = whole.length <= MAX_WHOLE_TOKEN ? [whole] : [];
  for (const segment of whole.split('.')) if (segment !== '' && segment.length <= MAX_PART_TOKEN) tokens.push(segment);
  return tokens;
}
