import type { KindRules } from './rules.js';

/** One observation's offer for the reconciled record: its values, whose they are, and how fresh. */
export interface Offer {
  ciId: string;
  sourceId: string;
  ciType: string;
  /** field → its value and since when this observation has reported that value (ISO 8601). */
  fields: Record<string, { value: unknown; since: string }>;
  lastSeen: string;
  /** When its values stop winning: last seen plus its source's schedule and the margin. */
  staleAt: string;
}

/** A person's pin: this field shows this source's value while the source reports one. */
export interface Pin {
  field: string;
  sourceId: string;
}

export interface ReconciledField {
  value: unknown;
  source_id: string;
  ci_id: string;
  since: string;
  /** Why this value won: `pinned`, `precedence` (a rule named its source), `latest`, or `stale` (only stale sources report it). */
  reason: 'pinned' | 'precedence' | 'latest' | 'stale';
  competing: { value: unknown; source_id: string; ci_id: string; since: string; stale: boolean }[];
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The rank of an offer under a field's precedence: the first selector it matches, or after all of them. */
function rank(offer: Offer, selectors: readonly string[]): number {
  const at = selectors.findIndex((s) => s === offer.ciType || s === `source:${offer.sourceId}`);
  return at === -1 ? selectors.length : at;
}

/**
 * The reconciled record: for every field some observation reports, the value of the observation
 * the rules prefer, with its provenance and the other observations' values. A pin wins while its
 * source reports the field; then fresh observations by precedence, the most recently seen first
 * among equals (the observation id breaks a tie, so the answer never depends on reading order);
 * a stale observation wins only when no fresh one reports the field.
 */
export function reconcileFields(
  offers: readonly Offer[],
  rules: KindRules,
  pins: readonly Pin[],
  now: Date,
  fieldOrder: readonly string[] = [],
): Record<string, ReconciledField> {
  const names = [...new Set(offers.flatMap((o) => Object.keys(o.fields)))].sort((a, b) => {
    const [ia, ib] = [fieldOrder.indexOf(a), fieldOrder.indexOf(b)];
    return (ia === -1 ? Infinity : ia) - (ib === -1 ? Infinity : ib) || a.localeCompare(b);
  });
  const record: Record<string, ReconciledField> = {};
  for (const field of names) {
    const reporting = offers.filter((o) => o.fields[field] !== undefined);
    const stale = (o: Offer) => new Date(o.staleAt).getTime() <= now.getTime();
    const selectors = rules.precedence[field] ?? rules.defaultPrecedence;
    const ordered = [...reporting].sort(
      (a, b) =>
        Number(stale(a)) - Number(stale(b)) ||
        rank(a, selectors) - rank(b, selectors) ||
        b.lastSeen.localeCompare(a.lastSeen) ||
        a.ciId.localeCompare(b.ciId),
    );
    const pin = pins.find((p) => p.field === field);
    const pinned = pin ? ordered.find((o) => o.sourceId === pin.sourceId) : undefined;
    const winner = pinned ?? ordered[0]!;
    const reason = pinned
      ? 'pinned'
      : stale(winner)
        ? 'stale'
        : rank(winner, selectors) < selectors.length
          ? 'precedence'
          : 'latest';
    const offered = winner.fields[field]!;
    record[field] = {
      value: offered.value,
      source_id: winner.sourceId,
      ci_id: winner.ciId,
      since: offered.since,
      reason,
      competing: ordered
        .filter((o) => o !== winner && !same(o.fields[field]!.value, offered.value))
        .map((o) => ({
          value: o.fields[field]!.value,
          source_id: o.sourceId,
          ci_id: o.ciId,
          since: o.fields[field]!.since,
          stale: stale(o),
        })),
    };
  }
  return record;
}
