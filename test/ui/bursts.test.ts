import { expect } from 'chai';
import { bursts, describeBurst, type BurstRecord } from '../../src/ui/app/lib/bursts.js';

let next = 0;
const record = (
  ci: string,
  at: string,
  change_type: BurstRecord['change_type'],
  fields: [string, unknown][],
  ci_type = 'k8s.pod',
): BurstRecord => ({
  id: String(++next),
  ci_id: ci,
  ci_type,
  ci_namespace: 'shop',
  changed_at: at,
  change_type,
  changes: fields.map(([field, new_value]) => ({ field, new_value })),
});

describe('bursts of one change on sibling CIs (web interface)', () => {
  it('groups a crash loop across pods and an archiving of several, leaving the config change on its own', () => {
    const timeline = [
      record('p1', '2026-11-30T14:20:03Z', 'DELETED', [['status', 'archived']]),
      record('p2', '2026-11-30T14:20:02Z', 'DELETED', [['status', 'archived']]),
      record('p3', '2026-11-30T14:20:01Z', 'DELETED', [['status', 'archived']]),
      record('p1', '2026-11-30T14:05:00Z', 'UPDATED', [['raw_data.status.containerStatuses.0.restartCount', 9]]),
      record('p2', '2026-11-30T14:05:00Z', 'UPDATED', [['raw_data.status.containerStatuses.0.restartCount', 9]]),
      record('p1', '2026-11-30T13:52:00Z', 'UPDATED', [['raw_data.status.containerStatuses.0.restartCount', 3]]),
      record('p2', '2026-11-30T13:52:00Z', 'UPDATED', [['raw_data.status.containerStatuses.1.restartCount', 3]]),
      record(
        'd',
        '2026-11-30T13:40:00Z',
        'UPDATED',
        [['raw_data.spec.template.spec.containers.0.env', []]],
        'k8s.deployment',
      ),
    ];
    const entries = bursts(timeline);
    expect(
      entries.map((entry) => (entry.kind === 'one' ? `one ${entry.record.ci_id}` : describeBurst(entry.burst))),
    ).to.deep.equal([
      '3 k8s.pod archived',
      'raw_data.status.containerStatuses[].restartCount changed on 2 k8s.pod (4 changes)',
      'one d',
    ]);
    const loop = entries[1];
    expect(loop?.kind === 'burst' && [loop.burst.newest, loop.burst.oldest]).to.deep.equal([
      '2026-11-30T14:05:00Z',
      '2026-11-30T13:52:00Z',
    ]);
  });

  it('starts a new burst once the same change comes more than the span after the group began', () => {
    const timeline = [
      record('a', '2026-11-30T12:00:00Z', 'CREATED', [['name', 'a']]),
      record('b', '2026-11-30T11:50:00Z', 'CREATED', [['name', 'b']]),
      record('c', '2026-11-30T11:40:00Z', 'CREATED', [['name', 'c']]),
      record('d', '2026-11-30T11:39:00Z', 'CREATED', [['name', 'd']]),
    ];
    const shape = bursts(timeline).map((entry) =>
      entry.kind === 'one' ? entry.record.ci_id : entry.burst.records.map((member) => member.ci_id).join('+'),
    );
    expect(shape).to.deep.equal(['a+b', 'c+d']);
  });

  it('keeps changes apart that differ in kind, type, namespace, fields or where a status went', () => {
    const timeline = [
      record('a', '2026-11-30T12:00:00Z', 'UPDATED', [['status', 'inactive']]),
      record('b', '2026-11-30T12:00:00Z', 'UPDATED', [['status', 'active']]),
      record('c', '2026-11-30T12:00:00Z', 'UPDATED', [['raw_data.spec.replicas', 2]]),
      record('d', '2026-11-30T12:00:00Z', 'UPDATED', [['raw_data.spec.replicas', 2]], 'k8s.deployment'),
      { ...record('e', '2026-11-30T12:00:00Z', 'UPDATED', [['raw_data.spec.replicas', 2]]), ci_namespace: 'other' },
    ];
    expect(bursts(timeline).every((entry) => entry.kind === 'one')).to.equal(true);
  });
});
