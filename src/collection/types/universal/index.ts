import { Type } from '@sinclair/typebox';
import type { CollectorType } from '../plugin.js';

/** The push-only type: its records arrive through the ingest route, never from the worker. */
export const universalType: CollectorType = {
  type: 'universal',
  description:
    'External agents push universal-format records to `POST /api/v1/sources/{id}/ingest`; cinv collects nothing itself.',
  configSchema: Type.Object({}),
  capabilities: {
    supports_universal_format: true,
    supports_multi_source: true,
    supports_watch: false,
    collects: false,
  },
  collectables: [],
  endpointSchemes: ['http', 'https'],
};
