import { expect } from 'chai';
import { presentStats } from '../../../src/history/changes/presenter.js';
import type { ChangeStats } from '../../../src/history/records/stats-model.js';

const figures = (series: ChangeStats['series'], end: string): ChangeStats => ({
  total_changes: series.reduce((sum, b) => sum + b.created + b.updated + b.archived, 0),
  affected_cis: 2,
  changes_by_type: { created: 1, updated: series.length, archived: 0 },
  top_changed_ci_types: [{ ci_type: 'k8s.pod', count: 3 }],
  changes_by_kind: [{ kind: 'image', count: 3 }],
  time_range: { start: '2026-08-01T00:00:00.000Z', end },
  series,
});

describe('statistics presenter', () => {
  it('writes the same document as the figures, with the series serialised once per array and the rest per answer', () => {
    const series = [
      { bucket_start: '2026-08-01T00:00:00.000Z', created: 1, updated: 0, archived: 0 },
      { bucket_start: '2026-08-01T01:00:00.000Z', created: 0, updated: 2, archived: 0 },
    ];
    const first = figures(series, '2026-08-02T00:00:00.000Z');
    expect(JSON.parse(presentStats(first).text)).to.deep.equal(first);
    // the same array in a later answer (a cached snapshot): its other members are the later answer's
    const later = figures(series, '2026-08-03T00:00:00.000Z');
    expect(JSON.parse(presentStats(later).text)).to.deep.equal(later);
    // a new snapshot is a new array, whatever the old one's text was
    const refreshed = [...series, { bucket_start: '2026-08-02T00:00:00.000Z', created: 0, updated: 0, archived: 5 }];
    const next = figures(refreshed, '2026-08-04T00:00:00.000Z');
    expect(JSON.parse(presentStats(next).text)).to.deep.equal(next);
    expect(JSON.parse(presentStats(figures([], '2026-08-05T00:00:00.000Z')).text).series).to.deep.equal([]);
  });
});
