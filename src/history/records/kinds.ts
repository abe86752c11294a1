import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { FieldChange } from './diff.js';

/**
 * What a change is about, for a reader of the history (docs/readable-changes.md). A record has
 * one: the first of this list among its field changes' kinds, so a rollout that ships both a new
 * image and new settings reads as `config`.
 */
export const CHANGE_KINDS = [
  'created',
  'archived',
  'replaced',
  'secret-ref',
  'config',
  'image',
  'version',
  'scale',
  'restart',
  'health',
  'status',
  'relationship',
  'metadata',
  'other',
] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

export const SEVERITIES = ['info', 'low', 'medium', 'high'] as const;
export type Severity = (typeof SEVERITIES)[number];

const rank = (severity: Severity) => SEVERITIES.indexOf(severity);
export const maxSeverity = (a: Severity, b: Severity): Severity => (rank(a) >= rank(b) ? a : b);

/** The types whose changes are read on their workload owner's timeline too (by `manages`). */
export const ROLLUP_TYPES: ReadonlySet<string> = new Set(['k8s.pod', 'k8s.replicaset']);

/** Types whose removal is the everyday churn of a rollout, not news. */
const CHURN_TYPES: ReadonlySet<string> = new Set(['k8s.pod', 'k8s.replicaset', 'k8s.endpointslice']);

export interface Shaped {
  kind: ChangeKind;
  severity: Severity;
  rolls_up: boolean;
}

interface Verdict {
  kind: ChangeKind;
  severity: Severity;
}

type Json = unknown;
const isObject = (value: Json): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const differs = (a: Json, b: Json) => !isDeepStrictEqual(a ?? null, b ?? null);

const CONTAINER_LISTS = /(^|\.)(containers|initContainers|ephemeralContainers)$/;
const SECRET_REFERENCE = /secretKeyRef|secretRef|"secret"|secretName/;
const BOOKKEEPING = /(^|\.)(generation|observedGeneration|resourceVersion|managedFields|uid)$/;
const IDENTITY = /(^|\.)(uid|machineID|systemUUID|providerID|creationTimestamp|bootID)$/;
const VERSIONS =
  /(^|\.)(version|kubeletVersion|kernelVersion|osImage|containerRuntimeVersion|kubeProxyVersion|server_version|redis_version)$/i;
const READY_COUNTS =
  /(^|\.)status\.(replicas|readyReplicas|availableReplicas|updatedReplicas|unavailableReplicas|currentReplicas|numberReady|numberAvailable)$/;
const HEALTH = /(^|\.)(health|lastError|conditions|phase|ready|state)$/;
const SETTINGS =
  /(^|\.)(settings|variables|config|definition|data|data_keys|binaryData|policy|connection_limit|parameters)(\.|$)/;

const text = (value: Json) => (typeof value === 'string' ? value : JSON.stringify(value ?? null));

/** Container lists compared container by container (by name), as a diff keeps them whole. */
function containers(change: FieldChange): Verdict[] {
  const byName = (list: Json) =>
    new Map(
      (Array.isArray(list) ? list : [])
        .filter(isObject)
        .map((c, i) => [typeof c.name === 'string' ? c.name : `#${i}`, c]),
    );
  const before = byName(change.old_value);
  const after = byName(change.new_value);
  const verdicts: Verdict[] = [];
  for (const name of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(name) ?? {};
    const b = after.get(name) ?? {};
    if (differs(a.image, b.image)) verdicts.push({ kind: 'image', severity: 'medium' });
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (key === 'image' || key === 'name' || !differs(a[key], b[key])) continue;
      const secret = SECRET_REFERENCE.test(text(a[key])) || SECRET_REFERENCE.test(text(b[key]));
      verdicts.push(secret && differsInSecrets(a[key], b[key]) ? secretRef() : { kind: 'config', severity: 'medium' });
    }
  }
  return verdicts;
}

const secretRef = (): Verdict => ({ kind: 'secret-ref', severity: 'high' });

/** Whether the references to secrets themselves differ (not only the values beside them). */
function differsInSecrets(a: Json, b: Json): boolean {
  const refs = (value: Json) =>
    text(value)
      .match(/"(secretKeyRef|secretRef|secret|secretName)":(\{[^}]*\}|"[^"]*")/g)
      ?.sort()
      .join() ?? '';
  return refs(a) !== refs(b);
}

/** Whether a counter went up (a container's restart count). */
function restarted(change: FieldChange): boolean {
  const counts = (value: Json) =>
    new Map(
      (Array.isArray(value) ? value : [value])
        .filter(isObject)
        .map((s, i) => [typeof s.name === 'string' ? s.name : `#${i}`, Number(s.restartCount ?? 0)]),
    );
  const before = counts(change.old_value);
  return [...counts(change.new_value)].some(([name, n]) => n > (before.get(name) ?? 0));
}

const failing = (value: Json) => /CrashLoopBackOff|Error|OOMKilled|"ready":false|^down$|^false$/.test(text(value));

/** The kind and severity of one field change of an updated CI. */
function fieldVerdicts(ciType: string, change: FieldChange): Verdict[] {
  const field = change.field.replace(/^(raw_data|type_data)\./, '');
  if (change.field === 'status') {
    return [
      change.new_value === 'archived'
        ? { kind: 'archived', severity: 'low' }
        : { kind: 'status', severity: change.new_value === 'active' ? 'info' : 'low' },
    ];
  }
  if (CONTAINER_LISTS.test(field) && /template|^spec\./.test(field)) return containers(change);
  if (/containerStatuses$/.test(field)) {
    if (restarted(change)) return [{ kind: 'restart', severity: failing(change.new_value) ? 'high' : 'medium' }];
    return [{ kind: 'health', severity: failing(change.new_value) ? 'medium' : 'low' }];
  }
  if (
    /(^|\.)(volumes|envFrom|env)$/.test(field) &&
    SECRET_REFERENCE.test(text(change.old_value) + text(change.new_value))
  )
    return [secretRef()];
  if (ciType === 'k8s.secret' && /^(data|data_keys|stringData)/.test(field)) return [secretRef()];
  if ((IDENTITY.test(field) && !/^metadata\.uid$/.test(field)) || (field === 'metadata.uid' && ciType === 'k8s.node'))
    return [{ kind: 'replaced', severity: 'medium' }];
  if (BOOKKEEPING.test(field) || /^metadata\.(labels|annotations)/.test(field))
    return [{ kind: 'metadata', severity: 'info' }];
  if (/(^|\.)spec\.replicas$/.test(field)) {
    // a workload scaled to or from nothing is an outage or its end; a replica set drained by a rollout is not
    const zero = (change.new_value === 0 || change.old_value === 0) && !CHURN_TYPES.has(ciType);
    return [{ kind: 'scale', severity: zero ? 'high' : 'low' }];
  }
  if (READY_COUNTS.test(field)) {
    const fewer = Number(change.new_value ?? 0) < Number(change.old_value ?? 0);
    return [{ kind: 'health', severity: fewer && change.new_value === 0 ? 'medium' : 'info' }];
  }
  if (VERSIONS.test(field)) return [{ kind: 'version', severity: 'medium' }];
  if (/(^|\.)(endpoints|subsets|ownerReferences)$/.test(field)) return [{ kind: 'relationship', severity: 'info' }];
  if (HEALTH.test(field)) return [{ kind: 'health', severity: failing(change.new_value) ? 'medium' : 'low' }];
  if (SETTINGS.test(field) || /^spec\./.test(field)) return [{ kind: 'config', severity: 'medium' }];
  return [{ kind: 'other', severity: 'low' }];
}

/**
 * The shipped rules: the kind, severity and roll-up of a change record of a built-in collector
 * type, from what it is and what it changed (docs/readable-changes.md lists them).
 */
export function shapeOf(record: { ci_type: string; change_type: string; changes: readonly FieldChange[] }): Shaped {
  const rolls_up = ROLLUP_TYPES.has(record.ci_type);
  if (record.change_type === 'CREATED') return { kind: 'created', severity: 'info', rolls_up };
  if (record.change_type === 'DELETED')
    return { kind: 'archived', severity: CHURN_TYPES.has(record.ci_type) ? 'info' : 'medium', rolls_up };
  const verdicts = record.changes.flatMap((change) => fieldVerdicts(record.ci_type, change));
  if (verdicts.length === 0) return { kind: 'other', severity: 'info', rolls_up };
  const kind = CHANGE_KINDS.find((k) => verdicts.some((v) => v.kind === k))!;
  let severity = verdicts.reduce<Severity>((s, v) => maxSeverity(s, v.severity), 'info');
  // a new build with new settings at once is the change an incident most often starts from
  if (kind === 'config' && verdicts.some((v) => v.kind === 'image')) severity = 'high';
  return { kind, severity, rolls_up };
}

const TIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX_ID = /^(sha256:|docker:\/\/|containerd:\/\/)?[0-9a-f]{12,}$/i;
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d))+$/;
const NUMBER = /^-?\d+(\.\d+)?$/;
// a generated name's suffix (a replica set's pod-template hash, a pod's random tail): letters and digits mixed
const GENERATED = /-(?=[a-z0-9]{5,10}(-|$))(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{5,10}/g;
/** Keys whose values differ between repeats by nature. */
const VARYING_KEYS = new Set([
  'uid',
  'resourceVersion',
  'generation',
  'observedGeneration',
  'startedAt',
  'finishedAt',
  'lastTransitionTime',
  'lastProbeTime',
  'lastHeartbeatTime',
  'lastUpdateTime',
  'lastScrape',
  'lastScrapeDuration',
  'creationTimestamp',
  'containerID',
  'podIP',
  'hostIP',
  'restartCount',
]);

/** A value with what varies between repeats replaced by tokens. */
function normalised(value: Json): Json {
  if (typeof value === 'number') return '<n>';
  if (typeof value === 'string') {
    if (TIME.test(value)) return '<time>';
    if (UUID.test(value) || HEX_ID.test(value)) return '<id>';
    if (DURATION.test(value)) return '<duration>';
    if (NUMBER.test(value)) return '<n>';
    return value.replace(GENERATED, '-<id>');
  }
  if (Array.isArray(value)) return value.map(normalised);
  if (isObject(value)) {
    const out: Record<string, Json> = {};
    for (const key of Object.keys(value).sort()) out[key] = VARYING_KEYS.has(key) ? '<v>' : normalised(value[key]);
    return out;
  }
  return value;
}

/**
 * The fingerprint repeats of one change share: the CI's type, the change type and each field
 * change with its values normalised (timestamps, ids, durations and counters as tokens). A
 * rollback is not a repeat of the rollout it undoes: the old and new values trade places.
 */
export function fingerprintOf(record: {
  ci_type: string;
  change_type: string;
  changes: readonly FieldChange[];
}): string {
  const patch = record.changes.map((c) => [c.field, normalised(c.old_value), normalised(c.new_value)]);
  return createHash('sha256')
    .update(JSON.stringify([record.ci_type, record.change_type, patch]))
    .digest('base64url')
    .slice(0, 22);
}
