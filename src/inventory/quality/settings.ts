/*
 * What the quality measures look for, per tenant: the shipped defaults and a tenant's own settings
 * over them. docs/quality.md defines every measure by these.
 */

export const MEASURES = ['freshness', 'staleness', 'orphans', 'duplicates', 'completeness', 'rules'] as const;
export type Measure = (typeof MEASURES)[number];

/** Paths a CI of a type should hold: every required one, and ideally the recommended ones. */
export interface TypePaths {
  required: string[];
  recommended: string[];
}

/**
 * A relationship a CI of a type must have: `out` from it (a pod `runs_on` its node), `in` to it
 * (a replica set `manages`-ed by its deployment), to or from an active CI of `other_type` when
 * given; `when`, a query-language match, says which CIs of the type need it.
 */
export interface RequiredRelationship {
  relationship_type: string;
  direction: 'out' | 'in';
  other_type?: string;
  when?: string;
}

export interface QualitySettings {
  /** The field path whose value is a CI's owner (`raw_data.metadata.labels.team`). */
  owner_path: string;
  /** Each measure's weight in the overall score (0 leaves it out). */
  weights: Record<Measure, number>;
  /** The share of required paths in a CI's completeness; recommended paths have the rest. */
  required_weight: number;
  /** A scheduled source is late once its interval times (1 + margin) has passed since its last successful list. */
  freshness_margin: number;
  /** Minutes an active CI may go unseen before it is stale: per type, else `default`. */
  stale_after_minutes: { default: number; by_type: Record<string, number> };
  completeness: Record<string, TypePaths>;
  required_relationships: Record<string, RequiredRelationship[]>;
  /** Scores below this (0-100) are flagged on /metrics (`cinv_quality_below_threshold`) for alerting. */
  alert_below: number;
}

const WORKLOAD: TypePaths = {
  required: ['raw_data.spec.selector', 'raw_data.spec.template.spec.containers'],
  recommended: ['raw_data.metadata.labels.team', 'raw_data.spec.template.spec.containers.*.resources.limits'],
};
const SERVER: TypePaths = { required: ['raw_data.version'], recommended: ['type_data.host'] };
const IN_NAMESPACE: RequiredRelationship = {
  relationship_type: 'member_of',
  direction: 'out',
  other_type: 'k8s.namespace',
  when: 'namespace exists',
};

export const DEFAULT_SETTINGS: QualitySettings = {
  owner_path: 'raw_data.metadata.labels.team',
  weights: { freshness: 1, staleness: 1, orphans: 1, duplicates: 1, completeness: 1, rules: 1 },
  required_weight: 0.6,
  freshness_margin: 0.5,
  stale_after_minutes: { default: 360, by_type: {} },
  completeness: {
    'k8s.deployment': WORKLOAD,
    'k8s.statefulset': WORKLOAD,
    'k8s.daemonset': WORKLOAD,
    'k8s.pod': {
      required: ['raw_data.spec.containers'],
      recommended: ['raw_data.metadata.labels.team', 'raw_data.spec.containers.*.resources.limits'],
    },
    'k8s.service': { required: ['raw_data.spec.ports'], recommended: ['raw_data.metadata.labels.team'] },
    'k8s.node': {
      required: ['raw_data.status.nodeInfo.kubeletVersion'],
      recommended: ['raw_data.metadata.labels."topology.kubernetes.io/zone"'],
    },
    'postgresql.server': SERVER,
    'mariadb.server': SERVER,
    'redis.server': SERVER,
  },
  required_relationships: {
    'k8s.pod': [
      { relationship_type: 'runs_on', direction: 'out', other_type: 'k8s.node', when: 'raw_data.spec.nodeName exists' },
      { relationship_type: 'manages', direction: 'in', when: 'raw_data.metadata.ownerReferences exists' },
      IN_NAMESPACE,
    ],
    'k8s.replicaset': [
      {
        relationship_type: 'manages',
        direction: 'in',
        other_type: 'k8s.deployment',
        when: 'raw_data.metadata.ownerReferences exists',
      },
      IN_NAMESPACE,
    ],
    'k8s.deployment': [IN_NAMESPACE],
    'k8s.persistentvolumeclaim': [
      {
        relationship_type: 'bound_to',
        direction: 'out',
        other_type: 'k8s.persistentvolume',
        when: 'raw_data.spec.volumeName exists',
      },
    ],
  },
  alert_below: 80,
};

/** A tenant's stored settings over the defaults: each top-level key given replaces the default's. */
export function effectiveSettings(stored: Partial<QualitySettings> | undefined): QualitySettings {
  if (!stored) return DEFAULT_SETTINGS;
  return {
    ...DEFAULT_SETTINGS,
    ...stored,
    weights: { ...DEFAULT_SETTINGS.weights, ...(stored.weights ?? {}) },
    stale_after_minutes: {
      ...DEFAULT_SETTINGS.stale_after_minutes,
      ...(stored.stale_after_minutes ?? {}),
    },
  };
}

/** The staleness threshold of a type, in minutes. */
export function staleAfterMinutes(settings: QualitySettings, ciType: string): number {
  const byType = settings.stale_after_minutes.by_type;
  return Object.hasOwn(byType, ciType) ? byType[ciType]! : settings.stale_after_minutes.default;
}
