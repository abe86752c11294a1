import { validationFailed, type FieldError } from '../../platform/errors.js';
import { compileBody, MAX_JSON_DEPTH, nestsDeeperThan, toFieldErrors } from '../../platform/validation.js';
import { Snapshot } from './records.js';

const validateSnapshot = compileBody(Snapshot);

const NUL = '\u0000';
const NUL_MESSAGE = 'must not contain NUL characters (\\u0000)';
const SURROGATE_MESSAGE = 'must be valid Unicode text: a surrogate (\\ud800-\\udfff) must be half of a high-low pair';

/** Whether a string is valid Unicode (no unpaired surrogate); String#isWellFormed is ES2024. */
const wellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

const TOO_DEEP = 1;
const HOLDS_NUL = 2;
const HOLDS_LONE_SURROGATE = 4;

const textFlags = (text: string): number =>
  (text.includes(NUL) ? HOLDS_NUL : 0) | (wellFormed(text) ? 0 : HOLDS_LONE_SURROGATE);

/**
 * What one walk of a JSON value finds: nesting deeper than `limit` (counting `depth` for the
 * value itself), and text, in keys or values, that PostgreSQL cannot store. Stops at the first
 * node too deep.
 */
function scan(node: unknown, depth: number, limit: number): number {
  if (typeof node === 'string') return textFlags(node);
  if (typeof node !== 'object' || node === null) return 0;
  if (depth > limit) return TOO_DEEP;
  let found = 0;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      found |= scan(node[i], depth + 1, limit);
      if (found & TOO_DEEP) return found;
    }
    return found;
  }
  for (const key in node) {
    found |= textFlags(key) | scan((node as Record<string, unknown>)[key], depth + 1, limit);
    if (found & TOO_DEEP) return found;
  }
  return found;
}

const messageOf = (found: number): string | undefined =>
  found & HOLDS_NUL ? NUL_MESSAGE : found & HOLDS_LONE_SURROGATE ? SURROGATE_MESSAGE : undefined;

/**
 * Why a JSON value cannot be stored (text and jsonb hold neither NUL characters nor unpaired
 * surrogates, which JSON's \u escapes can carry), or undefined. Documents reach this after the
 * depth check, so the recursion is bounded.
 */
export function unstorableText(node: unknown): string | undefined {
  return messageOf(scan(node, 1, Infinity));
}

/**
 * Refuses snapshots that could only fail midway, after earlier batches were committed: text that
 * cannot be stored (see unstorableText), and a delta naming one id both as an item and as a
 * deletion, which has no order to apply them in (and would not be idempotent on retry).
 * `unstorableItems`, when the caller has already looked, says why each refused item is refused.
 */
export function assertStorable(snapshot: Snapshot, unstorableItems?: ReadonlyMap<number, string>): void {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => errors.push({ field, location: 'body', message });
  snapshot.items.forEach((item, index) => {
    const message = unstorableItems ? unstorableItems.get(index) : unstorableText(item);
    if (message) refuse(`items.${index}`, message);
  });
  const scopeMessage = snapshot.scope_id == null ? undefined : messageOf(textFlags(snapshot.scope_id));
  if (scopeMessage) refuse('scope_id', scopeMessage);
  const deletions = snapshot.deletions ?? [];
  // only a delta with deletions needs the items' ids: a full collection skips a set of every id
  const itemIds = new Set(deletions.length > 0 ? snapshot.items.map((item) => item.external_id) : []);
  deletions.forEach((id, index) => {
    const message = messageOf(textFlags(id));
    if (message) refuse(`deletions.${index}`, message);
    else if (itemIds.has(id))
      refuse(`deletions.${index}`, 'is also listed in items; send an id as an item or as a deletion, not both');
  });
  if (errors.length > 0) throw validationFailed(errors);
}

/**
 * The depth check over a whole snapshot, which also notes on the way the items holding text that
 * cannot be stored: a bulk document is walked once instead of twice (the walks were a third of its
 * validation). `unstorableItems` is undefined when the document has no item list to walk item by
 * item.
 */
function scanSnapshot(document: unknown): { tooDeep: boolean; unstorableItems?: Map<number, string> } {
  const items =
    typeof document === 'object' && document !== null && !Array.isArray(document)
      ? (document as { items?: unknown }).items
      : undefined;
  if (!Array.isArray(items) || MAX_JSON_DEPTH < 2) return { tooDeep: nestsDeeperThan(document, MAX_JSON_DEPTH) };
  const root = document as Record<string, unknown>;
  for (const key in root) {
    // a member of the root sits at depth 2
    if (key !== 'items' && nestsDeeperThan(root[key], MAX_JSON_DEPTH - 1)) return { tooDeep: true };
  }
  const unstorableItems = new Map<number, string>();
  for (let i = 0; i < items.length; i++) {
    const found = scan(items[i], 3, MAX_JSON_DEPTH);
    if (found & TOO_DEEP) return { tooDeep: true };
    const message = messageOf(found);
    if (message) unstorableItems.set(i, message);
  }
  return { tooDeep: false, unstorableItems };
}

/** Validates a snapshot document (depth, schema, then storability) before anything is written. */
export function assertSnapshot(document: unknown): asserts document is Snapshot {
  const { tooDeep, unstorableItems } = scanSnapshot(document);
  if (tooDeep) {
    throw validationFailed([
      { field: '(root)', location: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
  }
  if (!validateSnapshot(document)) throw validationFailed(toFieldErrors(validateSnapshot.errors, 'body'));
  assertStorable(document as Snapshot, unstorableItems);
}
