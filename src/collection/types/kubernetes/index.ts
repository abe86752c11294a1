import { Type } from '@sinclair/typebox';
import type { CollectorType } from '../plugin.js';
import { collectKubernetes } from './collect.js';
import { SPECS } from './kinds.js';
import { CI_TYPES } from './type-data.js';
import { watchKubernetes } from './watch.js';

/**
 * The `kubernetes` collector type: the objects of one cluster, listed page by page (`limit` and
 * `continue`, the list restarted when a continue token expires) and, in hybrid mode, watched per
 * kind from the list's `resourceVersion` with bookmarks. The official client
 * (@kubernetes/client-node) turns the credentials into request options and runs the watches;
 * lists go through the request-forgery guard, and watches connect to the address it checked.
 *
 * External ids: `<kind>/<namespace>/<name>` (`<kind>/<name>` for cluster objects), kind in lower
 * case (`pod/default/web-1`, `node/worker-1`). Secrets are never collected; config maps without
 * their values.
 */

const ConfigSchema = Type.Object({
  cluster_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The cluster name CIs are scoped by (default the API server host).',
    }),
  ),
  page_size: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 5000, description: 'Objects per list request (`limit`, default 500).' }),
  ),
});

export const kubernetesType: CollectorType = {
  type: 'kubernetes',
  description:
    'Discovers a Kubernetes cluster through its API server: `k8s.<kind>` CIs for nodes, namespaces, pods, workloads, ' +
    'services, endpoint slices, ingresses, volumes, claims and config maps (keys only; secrets never), with `runs_on`, ' +
    '`manages`, `routes_to`, `bound_to`, `mounts`, `member_of` and `exposes` relationships, and usage from ' +
    '`metrics.k8s.io` when served. `collection_mode: hybrid` watches every kind between lists. Credentials `token` or `tls`.',
  configSchema: ConfigSchema,
  capabilities: { supports_universal_format: false, supports_multi_source: true, supports_watch: true, collects: true },
  collectables: SPECS.map((s) => s.name),
  ciTypes: CI_TYPES,
  endpointSchemes: ['http', 'https'],
  collect: collectKubernetes,
  watch: watchKubernetes,
};
