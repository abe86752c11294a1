import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { ClusterIndex } from './cluster-index.js';
import { externalId, get, list, str, type Json, type Kind, type KindSpec, type Obj } from './kinds.js';
import { backends, typeDataOf, type Usage } from './type-data.js';

type Relationship = { type: string; target_external_id: string };

/** The relationships an object of a kind has beside `member_of` and `manages`, which every kind may have. */
const RELATIONSHIPS: Partial<Record<Kind, (object: Obj, id: string, index: ClusterIndex) => Relationship[]>> = {
  pod: (object) => {
    const namespace = object.metadata?.namespace;
    const out: Relationship[] = [];
    const node = str(get(object, 'spec', 'nodeName'));
    if (node) out.push({ type: 'runs_on', target_external_id: `node/${node}` });
    for (const volume of list(get(object, 'spec', 'volumes'))) {
      const claim = str(get(volume, 'persistentVolumeClaim', 'claimName'));
      if (claim) out.push({ type: 'mounts', target_external_id: `persistentvolumeclaim/${namespace}/${claim}` });
      const configMap = str(get(volume, 'configMap', 'name'));
      if (configMap) out.push({ type: 'mounts', target_external_id: `configmap/${namespace}/${configMap}` });
    }
    return out;
  },
  persistentvolumeclaim: (object) => {
    const volume = str(get(object, 'spec', 'volumeName'));
    return volume ? [{ type: 'bound_to', target_external_id: `persistentvolume/${volume}` }] : [];
  },
  service: (_object, id, index) =>
    [...(index.servicePods.get(id) ?? [])].sort().map((pod) => ({ type: 'routes_to', target_external_id: pod })),
  ingress: (object) =>
    [...backends(object)]
      .sort()
      .map((service) => ({ type: 'exposes', target_external_id: `service/${object.metadata?.namespace}/${service}` })),
};

function relationshipsOf(spec: KindSpec, id: string, object: Obj, index: ClusterIndex): Relationship[] {
  const namespace = object.metadata?.namespace;
  const out: Relationship[] = [];
  if (spec.namespaced && namespace) out.push({ type: 'member_of', target_external_id: `namespace/${namespace}` });
  out.push(...(RELATIONSHIPS[spec.singular]?.(object, id, index) ?? []));
  for (const child of [...(index.children.get(id) ?? [])].sort())
    out.push({ type: 'manages', target_external_id: child });
  return out;
}

/** The object as stored: without managedFields; a config map with its keys and not its values. */
function rawOf(spec: KindSpec, object: Obj): Json {
  const metadata = { ...(object.metadata ?? {}) };
  delete metadata.managedFields;
  const raw: Json = { ...object, metadata };
  if (spec.singular === 'configmap') {
    raw.data_keys = Object.keys((object.data as Json | undefined) ?? {}).sort();
    raw.binary_data_keys = Object.keys((object.binaryData as Json | undefined) ?? {}).sort();
    delete raw.data;
    delete raw.binaryData;
  }
  return raw;
}

/** One object as a universal record; the index must hold the object already (see ClusterIndex.register). */
export function recordOf(spec: KindSpec, object: Obj, index: ClusterIndex, usage: Usage): UniversalRecord {
  const id = externalId(spec, object);
  const raw = rawOf(spec, object);
  return {
    external_id: id,
    ci_type: `k8s.${spec.singular}`,
    name: object.metadata?.name ?? id,
    namespace: object.metadata?.namespace ?? null,
    raw_data: raw,
    type_data: typeDataOf(spec.singular, raw as Obj, usage),
    relationships: relationshipsOf(spec, id, object, index),
  };
}
