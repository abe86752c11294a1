import { Counter, Gauge } from 'prom-client';

export const outboxPending = new Gauge({
  name: 'cinv_outbox_pending',
  help: 'Outbox rows waiting to be indexed (as last seen by this indexer)',
});

export const outboxLag = new Gauge({
  name: 'cinv_outbox_lag_seconds',
  help: 'Age of the oldest outbox row waiting to be indexed',
});

export const outboxParked = new Gauge({
  name: 'cinv_outbox_parked',
  help: 'Outbox rows parked after repeated permanent failures (cinv outbox retry re-queues them)',
});

export const documentsIndexed = new Counter({
  name: 'cinv_indexer_documents_indexed_total',
  help: 'Change records indexed into OpenSearch',
});

export const indexerFailures = new Counter({
  name: 'cinv_indexer_failures_total',
  help: 'Indexing failures: transient (429, 5xx), permanent (mapping errors), request (the bulk request failed)',
  labelNames: ['kind'] as const,
});
