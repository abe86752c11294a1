import { WatchExpired, type CollectContext, type CollectedBatch } from '../plugin.js';
import { KubeApi } from './api.js';
import { ClusterIndex, clusterIndexes } from './cluster-index.js';
import { enabledSpecs, externalId, get, list, quantity, str, type KindSpec, type Obj } from './kinds.js';
import { recordOf } from './records.js';
import type { Usage } from './type-data.js';

/** The instance CIs are scoped by: `config.cluster_name`, else the API server's host. */
export const scopeOf = (context: CollectContext) =>
  typeof context.source.config.cluster_name === 'string'
    ? context.source.config.cluster_name
    : new URL(context.source.endpoint ?? 'https://cluster').hostname;

/** Usage per node and pod from `metrics.k8s.io`; a cluster without it is a failed `metrics` component, not a failed run. */
async function usageOf(api: KubeApi, context: CollectContext): Promise<Usage> {
  const usage: Usage = { nodes: new Map(), pods: new Map() };
  try {
    const nodes = await api.get('/apis/metrics.k8s.io/v1beta1/nodes');
    const pods = await api.get('/apis/metrics.k8s.io/v1beta1/pods');
    for (const item of list(nodes?.items)) {
      usage.nodes.set(String(get(item, 'metadata', 'name')), {
        cpu_cores: quantity(get(item, 'usage', 'cpu')),
        memory_bytes: quantity(get(item, 'usage', 'memory')),
      });
    }
    for (const item of list(pods?.items)) {
      const containers = list(item.containers);
      const sum = (resource: string) =>
        containers.reduce((total, c) => total + (quantity(get(c, 'usage', resource)) ?? 0), 0);
      usage.pods.set(`${String(get(item, 'metadata', 'namespace'))}/${String(get(item, 'metadata', 'name'))}`, {
        cpu_cores: sum('cpu'),
        memory_bytes: sum('memory'),
      });
    }
    if (nodes || pods) context.component('metrics');
  } catch (error) {
    context.signal.throwIfAborted();
    context.component('metrics', error);
  }
  return usage;
}

interface Listing {
  api: KubeApi;
  scopeId: string;
  pageSize: number;
  index: ClusterIndex;
  usage: Usage;
}

/** One kind's list, page by page; the last page carries the version its watch starts from. */
async function* listKind(spec: KindSpec, listing: Listing): AsyncGenerator<CollectedBatch> {
  const { api, scopeId, pageSize, index, usage } = listing;
  let token: string | undefined;
  do {
    const page = await api.get(spec.path, { limit: String(pageSize), ...(token ? { continue: token } : {}) });
    if (!page) throw new Error(`${spec.path} is not served by this cluster`);
    const objects = list(page.items) as Obj[];
    for (const object of objects) index.register(spec, externalId(spec, object), object);
    token = str(get(page, 'metadata', 'continue')) ?? undefined;
    const version = str(get(page, 'metadata', 'resourceVersion'));
    yield {
      scopeId,
      records: objects.map((o) => recordOf(spec, o, index, usage)),
      ...(token === undefined && version ? { resume: { key: spec.name, version } } : {}),
    };
  } while (token);
}

/** Lists every enabled kind, page by page, restarting a kind's list when its continue token expires. */
export async function* collectKubernetes(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const api = await KubeApi.connect(context);
  const scopeId = scopeOf(context);
  const pageSize = typeof context.source.config.page_size === 'number' ? context.source.config.page_size : 500;
  const index = new ClusterIndex();
  // the server must answer before anything else: if not, the run fails
  await api.get('/version');
  const listing: Listing = { api, scopeId, pageSize, index, usage: await usageOf(api, context) };
  for (const spec of enabledSpecs(context.source.config)) {
    let restarts = 0;
    for (;;) {
      try {
        yield* listKind(spec, listing);
        context.component(spec.name);
        break;
      } catch (error) {
        context.signal.throwIfAborted();
        if (error instanceof WatchExpired && restarts++ < 3) continue;
        context.component(spec.name, error);
        break;
      }
    }
  }
  clusterIndexes.set(context.source.id, index);
}
