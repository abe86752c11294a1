import { Type } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import { CommonConfig, type CollectorType } from '../types/plugin.js';
import { collectorType, knownCollectorTypes } from '../types/registry.js';
import { validationFailed, type FieldError } from '../../platform/errors.js';
import { compileBody, toFieldErrors } from '../../platform/validation.js';
import { AllowedHosts, refusedEndpoint } from '../../platform/net/endpoint.js';

const configValidators = new Map<string, ValidateFunction>();

/** The complete `config` schema of a type: the common keys and its own, nothing else. */
export function configSchemaOf(type: CollectorType) {
  return Type.Object({ ...CommonConfig, ...type.configSchema.properties }, { additionalProperties: false });
}

/**
 * The collector types as the OpenAPI document describes them: what each discovers, its own
 * `config` keys and what `enabled_collectors` may name.
 */
export function collectorTypesDoc(): string {
  return knownCollectorTypes()
    .map((name) => {
      const type = collectorType(name)!;
      const keys = Object.entries(type.configSchema.properties as Record<string, { description?: string }>)
        .map(([key, schema]) => `\`${key}\`${schema.description ? ` (${schema.description})` : ''}`)
        .join('; ');
      const parts = [`- **\`${name}\`**: ${type.description}`];
      if (keys) parts.push(`Own config keys: ${keys}.`);
      for (const [ciType, keys] of Object.entries(type.ciTypes ?? {}))
        parts.push(`\`${ciType}\` type_data: ${keys.map((k) => `\`${k}\``).join(', ')}.`);
      if (type.collectables.length > 0)
        parts.push(`\`enabled_collectors\`: ${type.collectables.map((c) => `\`${c}\``).join(', ')}.`);
      return parts.join(' ');
    })
    .join('\n');
}

function configValidator(type: CollectorType): ValidateFunction {
  let validate = configValidators.get(type.type);
  if (!validate) {
    validate = compileBody(configSchemaOf(type));
    configValidators.set(type.type, validate);
  }
  return validate;
}

/** The type by name, or a 422 listing the known ones. */
export function requireCollectorType(name: string, field = 'collector_type'): CollectorType {
  const type = collectorType(name);
  if (!type)
    throw validationFailed([
      { field, location: 'body', message: `unknown collector type; known: ${knownCollectorTypes().join(', ')}` },
    ]);
  return type;
}

/**
 * Checks a source's settings against its type: the config keys and values, the collection mode
 * and what may be collected, and the endpoint (scheme, and the request forgery guard). `config` is
 * the merged result of an update, so that a partial update is judged as the source will be.
 */
export async function assertSourceSettings(
  type: CollectorType,
  settings: { endpoint: string | null | undefined; config: Record<string, unknown> },
  allowedHosts: AllowedHosts,
): Promise<void> {
  const errors: FieldError[] = [];
  const validate = configValidator(type);
  if (!validate(structuredClone(settings.config))) {
    errors.push(
      ...toFieldErrors(validate.errors, 'body').map((e) => ({
        ...e,
        field: `config.${e.field}`.replace(/\.\(root\)$/, ''),
      })),
    );
  }
  const { collection_mode: mode, enabled_collectors: enabled } = settings.config;
  if (mode === 'hybrid' && !type.capabilities.supports_watch) {
    errors.push({
      field: 'config.collection_mode',
      location: 'body',
      message: `the ${type.type} type cannot watch; use periodic`,
    });
  }
  if (Array.isArray(enabled)) {
    const unknown = enabled.filter((name) => typeof name === 'string' && !type.collectables.includes(name));
    if (unknown.length > 0) {
      const can = type.collectables.length > 0 ? type.collectables.join(', ') : 'nothing to choose from';
      errors.push({
        field: 'config.enabled_collectors',
        location: 'body',
        message: `unknown: ${unknown.join(', ')}; the ${type.type} type collects ${can}`,
      });
    }
  }
  if (settings.endpoint) {
    const reason = await endpointProblem(type, settings.endpoint, allowedHosts);
    if (reason) errors.push({ field: 'endpoint', location: 'body', message: reason });
  }
  if (errors.length > 0) throw validationFailed(errors);
}

async function endpointProblem(
  type: CollectorType,
  endpoint: string,
  allowedHosts: AllowedHosts,
): Promise<string | undefined> {
  const schemes = type.endpointSchemes ?? ['http', 'https'];
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return `must be an absolute URL (${schemes.map((s) => `${s}://`).join(' or ')})`;
  }
  if (!schemes.includes(url.protocol.slice(0, -1))) return `must use ${schemes.join(' or ')}`;
  if (url.username || url.password)
    return 'must not hold credentials (set them with PUT /api/v1/sources/{id}/credentials)';
  return refusedEndpoint(url, allowedHosts);
}
