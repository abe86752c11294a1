import { get, list, type KindSpec, type Obj } from './kinds.js';

/** What one object's record needs from the others: owners' children and services' pods. */
export class ClusterIndex {
  readonly children = new Map<string, Set<string>>();
  readonly servicePods = new Map<string, Set<string>>();
  private readonly ownersOf = new Map<string, string[]>();
  private readonly slicePods = new Map<string, { service: string; pods: string[] }>();

  register(spec: KindSpec, id: string, object: Obj): void {
    this.forget(id);
    const namespace = object.metadata?.namespace;
    const owners = (object.metadata?.ownerReferences ?? []).map(
      (o) => `${o.kind.toLowerCase()}/${namespace}/${o.name}`,
    );
    this.ownersOf.set(id, owners);
    for (const owner of owners) this.add(this.children, owner, id);
    if (spec.singular === 'endpointslice') {
      const service = object.metadata?.labels?.['kubernetes.io/service-name'];
      if (service) {
        const pods = list(object.endpoints)
          .map((e) => get(e, 'targetRef') as { kind?: string; name?: string; namespace?: string } | undefined)
          .filter((t) => t?.kind === 'Pod' && t.name)
          .map((t) => `pod/${t!.namespace ?? namespace}/${t!.name}`);
        const key = `service/${namespace}/${service}`;
        this.slicePods.set(id, { service: key, pods });
        for (const pod of pods) this.add(this.servicePods, key, pod);
      }
    }
  }

  forget(id: string): void {
    for (const owner of this.ownersOf.get(id) ?? []) this.children.get(owner)?.delete(id);
    this.ownersOf.delete(id);
    const slice = this.slicePods.get(id);
    if (slice) {
      this.slicePods.delete(id);
      const still = new Set(
        [...this.slicePods.values()].filter((s) => s.service === slice.service).flatMap((s) => s.pods),
      );
      this.servicePods.set(slice.service, still);
    }
  }

  private add(map: Map<string, Set<string>>, key: string, value: string): void {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(value);
  }
}

/** The index of each source's cluster, kept from its list for its watch. */
export const clusterIndexes = new Map<string, ClusterIndex>();
