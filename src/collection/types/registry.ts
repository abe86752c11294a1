import { kubernetesType } from './kubernetes/index.js';
import { mariadbType } from './mariadb/index.js';
import { natsType } from './nats/index.js';
import { UNKNOWN_TYPE_CAPABILITIES, type CollectorType } from './plugin.js';
import { postgresqlType } from './postgresql/index.js';
import { prometheusType } from './prometheus/index.js';
import { rabbitmqType } from './rabbitmq/index.js';
import { redisType } from './redis/index.js';
import { universalType } from './universal/index.js';

/**
 * The collector types this service knows, by name. The built-in ones are listed here; tests
 * register their own doubles beside them.
 */
const registry = new Map<string, CollectorType>(
  [universalType, kubernetesType, postgresqlType, prometheusType, redisType, mariadbType, natsType, rabbitmqType].map(
    (t) => [t.type, t],
  ),
);

export function registerCollectorType(type: CollectorType): void {
  registry.set(type.type, type);
}

const BUILT_IN = new Set(registry.keys());

/** Removes a type registered for a test; the built-in ones stay. */
export function unregisterCollectorType(name: string): void {
  if (!BUILT_IN.has(name)) registry.delete(name);
}

export function collectorType(name: string): CollectorType | undefined {
  return registry.get(name);
}

/** The types that collect by themselves (the worker runs their sources). */
export function collectingTypes(): string[] {
  return [...registry.values()].filter((t) => t.capabilities.collects && t.collect).map((t) => t.type);
}

export function knownCollectorTypes(): string[] {
  return [...registry.keys()].sort();
}

/** What a collector of this type can do, as the API shows it; a type this service does not know takes pushes only. */
export function capabilitiesOf(name: string): { supports_universal_format: boolean; supports_multi_source: boolean } {
  const { supports_universal_format, supports_multi_source } =
    collectorType(name)?.capabilities ?? UNKNOWN_TYPE_CAPABILITIES;
  return { supports_universal_format, supports_multi_source };
}
