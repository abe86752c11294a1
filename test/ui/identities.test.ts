import { expect } from 'chai';
import type { IdentityConflict, IdentityGraph, ReconciledField } from '../../src/ui/app/lib/api-shapes.js';
import {
  asDependencyGraph,
  competingTitle,
  IDENTITY_NODE_TYPE,
  keepApartDecision,
  mergeDecision,
  reasonText,
  sourceLabel,
  valueText,
} from '../../src/ui/app/lib/identities.js';

const member = (ci_id: string, identity_id: string | null = null) => ({
  ci_id,
  name: `host-${ci_id}`,
  ci_type: 'host.linux',
  source_id: '1',
  identity_id,
});

const conflict = (groups: ReturnType<typeof member>[][]): IdentityConflict => ({
  id: 'c0ffee00-0000-4000-8000-000000000001',
  kind: 'host',
  rule: 'hostname',
  shared_values: ['web-1'],
  explanation: 'Rule hostname matched 2 identities…',
  groups,
  status: 'open',
  raised_at: '2026-01-01T00:00:00.000Z',
  closed_at: null,
  decision_id: null,
});

describe('the identity views', () => {
  describe('the review queue’s decisions', () => {
    const queued = conflict([[member('a', 'i1'), member('b', 'i1')], [member('c', 'i2')], [member('d'), member('a')]]);

    it('keeps apart with one observation of each group and the conflict', () => {
      expect(keepApartDecision(queued)).to.deep.equal({
        action: 'keep_apart',
        ci_ids: ['a', 'c', 'd'],
        conflict_id: queued.id,
      });
    });

    it('merges every member of every group, each once, with the conflict and a reason when given', () => {
      expect(mergeDecision(queued, 'same machine')).to.deep.equal({
        action: 'merge',
        ci_ids: ['a', 'b', 'c', 'd'],
        conflict_id: queued.id,
        reason: 'same machine',
      });
    });

    it('leaves out an empty group and names no observation twice', () => {
      expect(keepApartDecision(conflict([[member('a')], [], [member('a')], [member('b')]])).ci_ids).to.deep.equal([
        'a',
        'b',
      ]);
    });
  });

  describe('a field’s provenance', () => {
    const names = new Map([[7, 'east cluster']]);
    const field: ReconciledField = {
      value: 'web-1',
      source_id: '7',
      ci_id: 'a',
      since: '2026-01-01T00:00:00.000Z',
      reason: 'precedence',
      competing: [
        { value: 'web-1.old', source_id: '8', ci_id: 'b', since: '2025-12-01T00:00:00.000Z', stale: true },
        { value: ['10.0.0.1'], source_id: '7', ci_id: 'c', since: '2025-12-02T00:00:00.000Z', stale: false },
      ],
    };

    it('names a source by its name when the caller may list sources, else by its id', () => {
      expect(sourceLabel(names, '7')).to.equal('east cluster');
      expect(sourceLabel(names, '8')).to.equal('source 8');
    });

    it('lists the competing values, each with its source, since when, and stale ones marked', () => {
      expect(competingTitle(field, names, (iso) => iso.slice(0, 10))).to.equal(
        [
          'Competing values:',
          'web-1.old from source 8 since 2025-12-01 (stale)',
          '["10.0.0.1"] from east cluster since 2025-12-02',
        ].join('\n'),
      );
      expect(competingTitle({ ...field, competing: [] }, names, String)).to.equal(
        'No other source reports another value',
      );
    });

    it('writes values and reasons for people', () => {
      expect(valueText(null)).to.equal('—');
      expect(valueText(42)).to.equal('42');
      expect(valueText({ a: 1 })).to.equal('{"a":1}');
      expect(reasonText('stale')).to.equal('only stale sources report it');
    });
  });

  describe('the graph', () => {
    const graph: IdentityGraph = {
      nodes: [
        { id: 'i', type: 'identity', name: 'web-1', ci_type: null, observation: false },
        { id: 'a', type: 'ci', name: 'web-1', ci_type: 'host.linux', observation: true },
        { id: 'p', type: 'ci', name: 'pg', ci_type: 'postgresql.server', observation: true },
        { id: 'd', type: 'ci', name: 'appdb', ci_type: 'postgresql.database', observation: false },
      ],
      edges: [
        { from: 'a', to: 'i', type: 'observes' },
        { from: 'p', to: 'i', type: 'runs-on' },
        { from: 'd', to: 'p', type: 'hosted_on' },
        { from: 'x', to: 'p', type: 'hosted_on' },
      ],
    };

    it('draws the identity at the centre, its observations a step away and their neighbours two', () => {
      const drawn = asDependencyGraph(graph);
      expect(drawn.nodes.map((node) => [node.ci_id, node.ci_type, node.depth])).to.deep.equal([
        ['i', IDENTITY_NODE_TYPE, 0],
        ['a', 'host.linux', 1],
        ['p', 'postgresql.server', 1],
        ['d', 'postgresql.database', 2],
      ]);
      expect(drawn.nodes.every((node) => node.status === 'active')).to.equal(true);
      expect(drawn).to.include({ hidden: 0, truncated: false });
    });

    it('keeps only the edges both of whose ends are drawn', () => {
      expect(asDependencyGraph(graph).edges).to.deep.equal([
        { from: 'a', to: 'i', relationship_type: 'observes' },
        { from: 'p', to: 'i', relationship_type: 'runs-on' },
        { from: 'd', to: 'p', relationship_type: 'hosted_on' },
      ]);
    });
  });
});
