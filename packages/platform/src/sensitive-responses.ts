import { z } from 'zod';
import { sensitiveData, type RouteDefinition } from './route.ts';

// What a route's responses can hold that nothing may keep, read from its response schemas
// (independently of its `returnsSensitive`): `packages/runtime/src/route-returns.int.spec.ts`
// checks every route of the service with it.

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $defs?: Record<string, JsonSchema>;
};

/** What a response schema shows it can hold: where, and what kind. */
interface Found {
  kind: 'token-data' | 'token-summary' | 'secret' | 'configuration' | 'any JSON';
  at: string;
}

/**
 * A credential by its name: `key`, `secret`, `password`, or a name ending so (`session_token`,
 * `signing_key`); a public key is none.
 */
const credentialName = /^(?!public_)(key|secret|password|[a-z_]*_(key|secret|token|password))$/;

/** Keywords that say nothing of what a value may be. */
const annotations = new Set([
  'description',
  'title',
  '$schema',
  'default',
  'examples',
  'readOnly',
  'deprecated',
]);
const unconstrained = (schema: JsonSchema | boolean | undefined) =>
  schema === true ||
  (typeof schema === 'object' && Object.keys(schema).every((keyword) => annotations.has(keyword)));

/** A map of names to values (`z.record`): what a reactor's or proxy's `configuration` is. */
const isMap = (schema: JsonSchema) =>
  schema.additionalProperties !== undefined && schema.additionalProperties !== false && !schema.properties;

/** A token's or intent's card and bank summaries and its fingerprint (`returnsSensitive` 'token-summary'). */
const summaryNames = new Set(['card', 'bank', 'fingerprint']);

const isString = (schema: JsonSchema) =>
  schema.type === 'string' || (schema.anyOf ?? []).some((branch) => branch.type === 'string');

/** Every place a response schema (as the OpenAPI document shows it) can hold token data or a secret. */
export function sensitiveIn(zodSchema: z.ZodType): Found[] {
  const root = z.toJSONSchema(zodSchema, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
  }) as JsonSchema;
  const found: Found[] = [];
  const resolve = (schema: JsonSchema): JsonSchema =>
    schema.$ref === '#' ? root : (root.$defs?.[schema.$ref!.replace('#/$defs/', '')] ?? {});
  /** A list whose items are described: a page's `data`, not a value. */
  const isListOfObjects = (schema: JsonSchema): boolean => {
    const list = schema.$ref ? resolve(schema) : schema;
    const item = list.items && (list.items.$ref ? resolve(list.items) : list.items);
    return list.type === 'array' && item?.properties !== undefined;
  };
  const walk = (schema: JsonSchema, at: string, seen: ReadonlySet<string>) => {
    if (schema.$ref) {
      // A recursive schema (a JSON value) is walked once.
      if (!seen.has(schema.$ref)) walk(resolve(schema), at, new Set([...seen, schema.$ref]));
      return;
    }
    // Anything at all (a reactor's `raw`): it can hold whatever its code made of token data.
    if (unconstrained(schema)) found.push({ kind: 'any JSON', at: at || '(the whole response)' });
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      const path = `${at}.${name}`;
      // A token's `data` is a JSON value; a page's `data` is a list of described items.
      if (name === 'data' && !isListOfObjects(property)) found.push({ kind: 'token-data', at: path });
      // A configuration's values are the tenant's credentials for a processor (a formula's
      // `configuration` is a list of declarations: names and types, no values).
      else if (summaryNames.has(name)) found.push({ kind: 'token-summary', at: path });
      else if (name === 'configuration' && isMap(property.$ref ? resolve(property) : property))
        found.push({ kind: 'configuration', at: path });
      else if (credentialName.test(name) && isString(property.$ref ? resolve(property) : property))
        found.push({ kind: 'secret', at: path });
      else walk(property, path, seen);
    }
    for (const branch of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
      walk(branch, at, seen);
    }
    // The whole response any object or list (POST /detokenize answers the body it was sent).
    // Deeper, a map of anything is not token data (a `configuration` map is found above).
    for (const [open, suffix] of [
      [schema.additionalProperties, '.*'],
      [schema.items, '[]'],
    ] as const) {
      if (open === undefined || open === false) continue;
      if (unconstrained(open)) {
        if (at === '') found.push({ kind: 'any JSON', at: `(the whole response)${suffix}` });
      } else if (open !== true) walk(open, `${at}${suffix}`, seen);
    }
  };
  walk(root, '', new Set());
  return found;
}

const secretKinds = new Set(
  Object.keys(sensitiveData).filter(
    (kind) => kind !== 'token-data' && kind !== 'token-summary' && kind !== 'configuration',
  ),
);

/**
 * What a route can return but does not declare, one line each. `reviewedAnyJson` names routes
 * (`post /tokenize`) whose response is any JSON yet holds neither, each with why.
 */
export function undeclaredSensitive(
  route: RouteDefinition,
  reviewedAnyJson: Readonly<Record<string, string>> = {},
): string[] {
  const declared = new Set<string>(route.returnsSensitive);
  const name = `${route.method} ${route.path}`;
  const problems: string[] = [];
  for (const [status, response] of Object.entries(route.responses)) {
    if (!response.schema) continue;
    for (const { kind, at } of sensitiveIn(response.schema)) {
      const where = `${name} ${status} ${at}`;
      if (kind === 'token-data' && !declared.has('token-data')) {
        problems.push(`${where}: token data, not in returnsSensitive`);
      } else if (kind === 'token-summary' && !declared.has('token-summary') && !declared.has('token-data')) {
        // A route declaring token data keeps no answer at all: its summaries go with it.
        problems.push(
          `${where}: a card or bank summary or a fingerprint, not in returnsSensitive (token-summary)`,
        );
      } else if (kind === 'secret' && ![...declared].some((own) => secretKinds.has(own))) {
        problems.push(`${where}: a secret, returnsSensitive names none (${[...secretKinds].join(', ')})`);
      } else if (kind === 'configuration' && !declared.has('configuration')) {
        problems.push(`${where}: a configuration (credentials), not in returnsSensitive`);
      } else if (kind === 'any JSON' && declared.size === 0 && reviewedAnyJson[name] === undefined) {
        problems.push(`${where}: any JSON, which can hold token data: declare what it returns`);
      }
    }
  }
  return problems;
}
