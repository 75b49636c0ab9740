// What the API reference (GET /docs) shows of each operation beyond its schemas: the permission
// it needs, first in its description, and an example of every JSON request and response body,
// given for the key operations and otherwise generated from the body's JSON schema.
import { anyCaller } from './route.ts';

type JsonSchema = Record<string, unknown>;

/** Examples of one operation, by `"<method> <OpenAPI path>"` (`"post /tokens"`). */
export interface OperationExamples {
  request?: unknown;
  /** By status code. */
  responses?: Record<number, unknown>;
}

interface MediaType {
  schema?: JsonSchema;
  example?: unknown;
}

interface Operation {
  description?: string;
  'x-permission'?: string;
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { content?: Record<string, MediaType> }>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components?: { schemas?: Record<string, unknown> };
}

/**
 * zod writes a recursive schema (token `data`, any JSON) with `$defs` of its own and refs
 * `#/$defs/…`, which inside an OpenAPI document point at the document's root, where nothing is:
 * viewers fail to resolve them. Each such definition moves to `components.schemas` (one entry per
 * distinct definition) and its refs follow it.
 */
export function hoistSchemaDefinitions<D extends OpenApiDocument>(document: D): D {
  const copy = structuredClone(document);
  const schemas = ((copy.components ??= {}).schemas ??= {});
  const byContent = new Map<string, string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    const defs = record.$defs as Record<string, unknown> | undefined;
    if (defs && typeof defs === 'object') {
      delete record.$defs;
      const renamed = new Map<string, string>();
      for (const [name, definition] of Object.entries(defs)) {
        const content = JSON.stringify(definition);
        let target = byContent.get(content);
        if (!target) {
          target = name.replace(/^_+/, '') || 'Schema';
          for (let n = 2; target in schemas; n++) target = `${name.replace(/^_+/, '')}_${n}`;
          byContent.set(content, target);
          schemas[target] = definition;
        }
        renamed.set(`#/$defs/${name}`, `#/components/schemas/${target}`);
      }
      const rewrite = (inner: unknown): void => {
        if (Array.isArray(inner)) return inner.forEach(rewrite);
        if (typeof inner !== 'object' || inner === null) return;
        const item = inner as Record<string, unknown>;
        if (typeof item.$ref === 'string' && renamed.has(item.$ref)) item.$ref = renamed.get(item.$ref);
        Object.values(item).forEach(rewrite);
      };
      rewrite(record);
      for (const name of new Set(renamed.values())) rewrite(schemas[name.split('/').pop()!]);
    }
    Object.values(record).forEach(visit);
  };
  visit(copy.paths);
  return copy;
}

/** The document with every operation's permission in its description and examples on its bodies. */
export function describeOperations<D extends OpenApiDocument>(
  document: D,
  examples: Record<string, OperationExamples> = {},
): D {
  const copy = structuredClone(document);
  const resolve = (ref: string) => {
    const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
    return name ? (copy.components?.schemas?.[name] as JsonSchema | undefined) : undefined;
  };
  for (const [path, operations] of Object.entries(copy.paths)) {
    for (const [method, value] of Object.entries(operations)) {
      const operation = value as Operation;
      const given = examples[`${method} ${path}`] ?? {};
      const permission = operation['x-permission'];
      const access = !permission
        ? 'No API key needed.'
        : permission === anyCaller
          ? `Permission: \`${anyCaller}\` (any API key, whatever it holds).`
          : `Permission: \`${permission}\``;
      operation.description = operation.description ? `${access}\n\n${operation.description}` : access;
      for (const [type, request] of Object.entries(operation.requestBody?.content ?? {})) {
        if (/^application\/(.+\+)?json$/.test(type)) {
          request.example = given.request ?? exampleOf(request.schema, resolve);
        }
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const media = response.content?.['application/json'];
        if (!media) continue;
        media.example = given.responses?.[Number(status)] ?? exampleOf(media.schema, resolve);
      }
    }
  }
  return copy;
}

const formatExamples: Record<string, string> = {
  uuid: '0b9e4c3e-5d0b-4a8e-9d4c-2f6f5b2a7c11',
  'date-time': '2030-01-01T12:00:00.000Z',
  date: '2030-01-01',
  email: 'someone@example.com',
  uri: 'https://example.com',
  url: 'https://example.com',
};

/** A plausible value of a JSON schema (draft 2020-12, as zod writes them). */
export function exampleOf(
  schema: JsonSchema | undefined,
  resolve: (ref: string) => JsonSchema | undefined = () => undefined,
  depth = 0,
): unknown {
  if (!schema || depth > 8) return undefined;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if (typeof schema.$ref === 'string') return exampleOf(resolve(schema.$ref), resolve, depth + 1);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length) {
      const schemas = options as JsonSchema[];
      const option = schemas.find((item) => item.type !== 'null') ?? schemas[0];
      return exampleOf(option, resolve, depth + 1);
    }
  }
  if (Array.isArray(schema.allOf)) {
    return Object.assign(
      {},
      ...(schema.allOf as JsonSchema[]).map((part) => exampleOf(part, resolve, depth + 1) ?? {}),
    );
  }
  const type = Array.isArray(schema.type)
    ? (schema.type as unknown[]).find((item) => item !== 'null')
    : schema.type;
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const example: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(properties)) {
        const value = exampleOf(property, resolve, depth + 1);
        if (value !== undefined) example[name] = value;
      }
      return example;
    }
    case 'array': {
      const item = exampleOf(schema.items as JsonSchema | undefined, resolve, depth + 1);
      return item === undefined ? [] : [item];
    }
    case 'string':
      return (
        formatExamples[String(schema.format)] ??
        'string'.padEnd(typeof schema.minLength === 'number' ? schema.minLength : 0, '0')
      );
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return undefined;
  }
}
