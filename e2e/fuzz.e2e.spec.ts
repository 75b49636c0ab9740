import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useStack } from './support/stack.ts';

/**
 * Requests built from the running service's own OpenAPI document, valid-ish and hostile, for
 * every operation: none may answer 5xx, and every 4xx must be a well-formed problem+json.
 * Seeded and reproducible: FUZZ_SEED=<seed> repeats a run (each operation runs on the seed plus
 * its position); fast-check prints the seed and the request of a failure. FUZZ_RUNS sets the
 * requests per operation.
 */
const seed = Number(process.env.FUZZ_SEED ?? 20_260_309);
const runsPerOperation = Number(process.env.FUZZ_RUNS ?? 250);

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  $ref?: string;
}

/** The schema a `$ref` (a JSON pointer into the OpenAPI document) names, if any. */
type Resolve = (ref: string) => JsonSchema | undefined;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
}

interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body?: JsonSchema;
  /** The body's media types the document declares (merge patch besides JSON, say). */
  bodyTypes: string[];
}

/** `#/components/schemas/Json` and the like, read from the document itself. */
function pointerResolver(document: unknown): <T = JsonSchema>(ref: string) => T | undefined {
  return <T>(ref: string) => {
    if (!ref.startsWith('#/')) return undefined;
    let node = document;
    for (const step of ref.slice(2).split('/')) {
      const key = step.replace(/~1/g, '/').replace(/~0/g, '~');
      if (typeof node !== 'object' || node === null) return undefined;
      node = (node as Record<string, unknown>)[key];
    }
    return node as T | undefined;
  };
}

/**
 * How many `$ref`s one value may pass through: the JSON schemas are recursive (token data), so
 * past this only the options that refer no further are taken.
 */
const maxRefDepth = 3;

const refersFurther = (schema: JsonSchema) => JSON.stringify(schema).includes('"$ref"');

interface FuzzRequest {
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: string;
}

/** Values that reach the handlers: strings of the shape the schema asks for. */
function validish(schema: JsonSchema, resolve: Resolve, refDepth = 0): fc.Arbitrary<unknown> {
  // Nested schemas share the resolver and the count of refs passed through.
  const inner = (nested: JsonSchema) => validish(nested, resolve, refDepth);
  if (schema.$ref) {
    const target = resolve(schema.$ref);
    // A ref the document cannot resolve (the docs test forbids it): any JSON still goes.
    if (!target) return fc.jsonValue({ maxDepth: 1 });
    if (refDepth < maxRefDepth) return validish(target, resolve, refDepth + 1);
    const leaves = (target.anyOf ?? target.oneOf ?? []).filter((option) => !refersFurther(option));
    if (leaves.length) return fc.oneof(...leaves.map(inner));
    return refersFurther(target) ? fc.jsonValue({ maxDepth: 0 }) : inner(target);
  }
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const options = schema.anyOf ?? schema.oneOf;
  if (options) return fc.oneof(...options.map(inner));
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string': {
      const maxLength = Math.min(schema.maxLength ?? 40, 60);
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'email') return fc.emailAddress();
      if (schema.format === 'date' || schema.format === 'date-time') {
        // Up to the last four-digit year, with offsets that can push the instant past it.
        const local = fc.date({
          min: new Date('1990-01-01'),
          max: new Date('9999-12-31T23:59:59Z'),
          noInvalidDate: true,
        });
        if (schema.format === 'date') return local.map((date) => date.toISOString().slice(0, 10));
        const offset = fc.oneof(
          fc.constant('Z'),
          fc
            .tuple(
              fc.constantFrom('+', '-'),
              fc.integer({ min: 0, max: 23 }),
              fc.integer({ min: 0, max: 59 }),
            )
            .map(
              ([sign, hours, minutes]) =>
                `${sign}${String(hours).padStart(2, '0')}:${String(minutes).padStart(2, '0')}`,
            ),
        );
        return fc.tuple(local, offset).map(([date, zone]) => `${date.toISOString().slice(0, 23)}${zone}`);
      }
      if (schema.pattern) {
        return fc
          .stringMatching(new RegExp(schema.pattern))
          .map((value) => value.slice(0, maxLength))
          .filter((value) => value.length >= (schema.minLength ?? 0));
      }
      return fc.string({ minLength: schema.minLength ?? 0, maxLength, unit: 'grapheme' });
    }
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1_000, -1_000_000),
        max: Math.min(schema.maximum ?? 1_000, 1_000_000),
      });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? inner(schema.items) : fc.jsonValue(), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'object': {
      const known = Object.entries(schema.properties ?? {});
      // The document says no more than "string" of an address (its check is a transform).
      const valueOf = (name: string, property: JsonSchema) =>
        name === 'email' ? fc.emailAddress() : inner(property);
      const record = fc.record(
        Object.fromEntries(known.map(([name, property]) => [name, valueOf(name, property)])),
        { requiredKeys: schema.required ?? [] },
      );
      if (typeof schema.additionalProperties !== 'object') return record;
      const map = fc.dictionary(
        schema.propertyNames ? (inner(schema.propertyNames) as fc.Arbitrary<string>) : fc.string(),
        inner(schema.additionalProperties),
        { maxKeys: 4 },
      );
      return fc.tuple(record, map).map(([fixed, extra]) => ({ ...extra, ...fixed }));
    }
    case undefined:
    default:
      // No type (or another one): any JSON.
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Strings a hostile client sends: controls, NUL, lone surrogates, bidi, long, percent junk. */
const oddString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfff',
    '\r\nX-Injected: 1',
    '\u202Egnp.exe',
    '\u2028',
    '\u0085',
    '💳',
    '',
    ' ',
    '../../etc/passwd',
    '%zz',
    "'; DROP TABLE es_events; --",
    '${jndi:ldap://x}',
    '0000-01-01',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999999999-23:59',
    '275760-09-13',
    'a'.repeat(10_000),
  ),
);

/** Raw number texts past what a double holds, or on its edges. */
const oddNumberText = fc.constantFrom(
  '1e400',
  '-1e400',
  '1e308',
  '9007199254740993',
  '123456789012345678901234567890',
  '-0',
  '0.1e-400',
  '1.5',
  '-1',
  '0',
);

/** Percent-encoding of a string, with a lone surrogate standing for its (invalid) UTF-8 bytes. */
const percentEncode = (value: string) => {
  try {
    return encodeURIComponent(value);
  } catch {
    return encodeURIComponent(value.replace(/[\ud800-\udfff]/g, '')) + '%ED%A0%80';
  }
};

/** A path segment, already as it goes on the wire. */
function pathSegment(
  parameter: Parameter,
  knownIds: string[],
  hostile: boolean,
  resolve: Resolve,
): fc.Arbitrary<string> {
  const plausible = fc.oneof(
    fc.constantFrom(...knownIds).map(percentEncode),
    validish(parameter.schema, resolve).map((value) => percentEncode(String(value))),
  );
  if (!hostile) return plausible;
  // `.` and `..` (also as %2e) are resolved by the client before sending: they would aim at
  // another route (`/tenants/self/members/..` is DELETE /tenants/self).
  const notDotSegment = (segment: string) => (/^(\.|%2e){1,2}$/i.test(segment) ? `${segment}x` : segment);
  return fc
    .oneof(
      { weight: 2, arbitrary: plausible },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          '%',
          '%zz',
          '%E2%82',
          '%C0%AF',
          '%00',
          'a%00b',
          '%ED%A0%80',
          '%FF%FE',
          '%2F',
          '~',
          '%u0041',
          'a'.repeat(5_000),
        ),
      },
      { weight: 2, arbitrary: oddString.map(percentEncode) },
    )
    .map(notDotSegment);
}

/** `name=value` pairs for one query parameter (none, one, or repeated), on the wire. */
function queryPairs(parameter: Parameter, hostile: boolean, resolve: Resolve): fc.Arbitrary<string[]> {
  const name = percentEncode(parameter.name);
  // A repeatable parameter's schema is "one value or an array of them".
  const single = parameter.schema.anyOf?.find((option) => option.type !== 'array') ?? parameter.schema;
  const repeatable = parameter.schema.anyOf?.some((option) => option.type === 'array') ?? false;
  const plausible = validish(single, resolve).map((item) => percentEncode(String(item)));
  if (!hostile) {
    // Mostly absent, so that parameters that exclude each other (page and start) seldom meet.
    return fc.oneof(
      { weight: 3, arbitrary: fc.constant<string[]>([]) },
      {
        weight: 1,
        arbitrary: fc
          .array(plausible, { minLength: 1, maxLength: repeatable ? 4 : 1 })
          .map((items) => items.map((item) => `${name}=${item}`)),
      },
    );
  }
  const value = fc.oneof(
    { weight: 2, arbitrary: plausible },
    { weight: 1, arbitrary: oddNumberText },
    { weight: 2, arbitrary: oddString.map(percentEncode) },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%00', '%ED%A0%80', '%FF') },
  );
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<string[]>([]) },
    { weight: 5, arbitrary: value.map((item) => [`${name}=${item}`]) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(value, fc.integer({ min: 2, max: 150 }))
        .map(([item, count]) => Array.from({ length: count }, () => `${name}=${item}`)),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<string[]>([name], [`${name}=`], [`${name}[]=1`], [`${name}[a][b]=1`]),
    },
  );
}

/** What fetch lets into a header value: tab, then 0x20 to 0xFF but DEL. */
const headerCharacter = fc.oneof(
  fc.constant('\t'),
  fc
    .integer({ min: 0x20, max: 0xff })
    .filter((code) => code !== 0x7f)
    .map((code) => String.fromCharCode(code)),
);

/** A header parameter's value (Idempotency-Key): absent in most plausible requests. */
function headerValue(
  parameter: Parameter,
  hostile: boolean,
  resolve: Resolve,
): fc.Arbitrary<string | undefined> {
  // Unbiased: fast-check's bias towards small values would give many requests one key (a 422).
  const plausible = fc.noBias(validish(parameter.schema, resolve)).map(String);
  const absent = fc.constant(undefined);
  if (!hostile) return fc.oneof({ weight: 3, arbitrary: absent }, { weight: 1, arbitrary: plausible });
  return fc.oneof(
    { weight: 2, arbitrary: absent },
    { weight: 2, arbitrary: plausible },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom('', ' ', 'a\tb', 'ünïcode', '\u00ff', 'x'.repeat(256), 'x'.repeat(10_000)),
        fc.string({ unit: headerCharacter, maxLength: 30 }),
      ),
    },
  );
}

/** Raw JSON texts JSON.stringify could not (or would not) write. */
const rawJsonValue = fc.oneof(
  oddNumberText,
  fc.constantFrom(63, 64, 65, 1_000, 3_000).map((levels) => `${'['.repeat(levels)}1${']'.repeat(levels)}`),
  fc.constant(`${'{"a":'.repeat(2_000)}1${'}'.repeat(2_000)}`),
);

type Mutation =
  | { kind: 'none' }
  | { kind: 'replace'; steps: number[]; value: unknown }
  | { kind: 'raw'; steps: number[]; text: string }
  | { kind: 'extra'; name: string; value: unknown }
  | { kind: 'whole'; text: string };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      steps: fc.array(fc.nat(), { maxLength: 3 }),
      value: fc.oneof(
        oddString,
        fc.jsonValue({ maxDepth: 2 }),
        fc.constantFrom(null, true, -1, 1e308, [], {}),
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('raw' as const),
      steps: fc.array(fc.nat(), { maxLength: 3 }),
      text: rawJsonValue,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('extra' as const), name: oddString, value: fc.jsonValue() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('whole' as const),
      text: fc.oneof(
        fc.jsonValue().map((value) => JSON.stringify(value)),
        rawJsonValue,
        fc.constantFrom('', '{', '{"a":1,}', 'null', '"\\ud800"', '{"data":"\\u0000"}', '\u0000'),
      ),
    }),
  },
);

const rawMarker = '\u0001fuzz-raw\u0001';

/** The body after the mutation, as text. Steps walk down into objects and arrays. */
function applyMutation(body: unknown, change: Mutation): string {
  if (change.kind === 'none') return JSON.stringify(body);
  if (change.kind === 'whole') return change.text;
  if (change.kind === 'extra') {
    return JSON.stringify({ ...(body as object), [change.name]: change.value });
  }
  const copy = structuredClone(body);
  const replacement = change.kind === 'raw' ? rawMarker : change.value;
  let target = copy;
  let key: string | number | undefined;
  let parent: Record<string | number, unknown> | undefined;
  for (const step of change.steps) {
    if (typeof target !== 'object' || target === null) break;
    const keys = Object.keys(target);
    if (!keys.length) break;
    parent = target as Record<string, unknown>;
    key = keys[step % keys.length]!;
    target = parent[key];
  }
  const text = JSON.stringify(
    parent && key !== undefined ? ((parent[key] = replacement), copy) : replacement,
  );
  return change.kind === 'raw' ? text.replace(JSON.stringify(rawMarker), change.text) : text;
}

/**
 * Half the requests are plausible (known ids, values of the schema's shape, an unchanged body) so
 * that they reach the handlers and the database; the other half are hostile in every part.
 */
function requestFor(operation: Operation, knownIds: string[], resolve: Resolve): fc.Arbitrary<FuzzRequest> {
  return fc.boolean().chain((hostile) => {
    const segments = operation.parameters
      .filter((parameter) => parameter.in === 'path')
      .map((parameter) =>
        pathSegment(parameter, knownIds, hostile, resolve).map((value) => [parameter.name, value] as const),
      );
    const queries = operation.parameters
      .filter((parameter) => parameter.in === 'query')
      .map((parameter) => queryPairs(parameter, hostile, resolve));
    const headerParameters = operation.parameters
      .filter((parameter) => parameter.in === 'header')
      .map((parameter) =>
        headerValue(parameter, hostile, resolve).map((value) => [parameter.name, value] as const),
      );
    const unknownQuery = hostile
      ? fc.oneof(
          { weight: 4, arbitrary: fc.constant([] as string[]) },
          { weight: 1, arbitrary: oddString.map((name) => [`${percentEncode(name)}=1`]) },
        )
      : fc.constant([] as string[]);
    const body = operation.body
      ? fc
          .tuple(
            validish(operation.body, resolve),
            hostile ? mutation : fc.constant<Mutation>({ kind: 'none' }),
          )
          .map(([value, change]) => applyMutation(value, change))
      : fc.constant(undefined);
    const contentType = hostile
      ? fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...operation.bodyTypes) },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              'application/json; charset=latin1',
              'text/plain',
              'application/merge-patch+json',
            ),
          },
        )
      : fc.constantFrom(...operation.bodyTypes);
    const requestId = hostile
      ? fc.option(fc.string({ unit: 'grapheme-ascii', maxLength: 100 }), { nil: undefined })
      : fc.constant(undefined);
    return fc
      .record({
        segments: fc.tuple(...segments),
        pairs: fc.tuple(...queries, unknownQuery),
        headerPairs: fc.tuple(...headerParameters),
        body,
        contentType,
        requestId,
      })
      .map(({ segments: values, pairs, headerPairs, body: text, contentType: type, requestId: id }) => {
        let path = operation.path;
        for (const [name, value] of values) path = path.replace(`{${name}}`, value);
        const headers: Record<string, string> = {};
        for (const [name, value] of headerPairs) if (value !== undefined) headers[name] = value;
        if (text !== undefined) headers['content-type'] = type;
        if (id !== undefined) headers['x-request-id'] = id;
        return {
          path,
          query: pairs.flat().join('&'),
          headers,
          ...(text === undefined ? {} : { body: text }),
        };
      });
  });
}

describe('fuzzing every operation of the OpenAPI document', () => {
  // Thousands of requests with one key: a quota the default would refuse part of them by.
  const env = useStack({
    EMAIL_ATTEMPTS: '1',
    LOG_LEVEL: 'warn',
    READ_YOUR_WRITES_TIMEOUT_MS: '2000',
    RATE_LIMIT_PER_MINUTE: '10000000',
  });
  const operations: Operation[] = [];
  const knownIds: string[] = [];
  let resolve: ReturnType<typeof pointerResolver> = () => undefined;

  it('reads the document and creates things to aim at', async () => {
    const document = (await env.stack.client.request('GET', '/openapi.json')).body as {
      paths: Record<
        string,
        Record<
          string,
          {
            parameters?: (Parameter | { $ref: string })[];
            requestBody?: { content: Record<string, { schema: JsonSchema }> };
          }
        >
      >;
    };
    resolve = pointerResolver(document);
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const content = operation.requestBody?.content ?? {};
        operations.push({
          method: method.toUpperCase(),
          path,
          // Shared parameters (Idempotency-Key) are refs to components.parameters.
          parameters: (operation.parameters ?? []).map((parameter) =>
            '$ref' in parameter ? resolve<Parameter>(parameter.$ref)! : parameter,
          ),
          ...(operation.requestBody ? { body: content['application/json']!.schema } : {}),
          bodyTypes: Object.keys(content).length ? Object.keys(content) : ['application/json'],
        });
      }
    }
    expect(operations.length).toBeGreaterThan(20);
    // Every shared schema or parameter the operations refer to is found: an unresolved one would
    // quietly get arbitrary JSON instead of values of its shape.
    const refs = new Set(
      [...JSON.stringify(document).matchAll(/"\$ref":"([^"]+)"/g)].map((match) => match[1]!),
    );
    expect([...refs].filter((ref) => ref.startsWith('#/components/schemas/')).length).toBeGreaterThan(0);
    for (const ref of refs) expect(resolve(ref), ref).toBeTypeOf('object');
    const client = env.tenant.client;
    const parent = await client.tokens.create({ id: 'fuzz-parent', data: { any: 'thing' } });
    const child = await client.tokens.create({ id: 'fuzz-child', data: 2, metadata: { a: 'b' } });
    await client.request('POST', `/tokens/${parent.id}/children/${child.id}`);
    // Not the fuzzing key's own application: deleting or narrowing that would end the run.
    const target = await client.applications.create({ name: 'fuzz target', type: 'private' });
    const invitation = await client.request<{ id: string }>('POST', '/tenants/self/invitations', {
      body: { email: 'fuzz@example.com' },
    });
    knownIds.push(parent.id, child.id, target.id, invitation.body.id, env.tenant.ownerUserId);
  });

  it('refuses an empty, whitespace-only or BOM-only body on every JSON route that takes one, and strips a BOM', async () => {
    const withBody = operations.filter((operation) => operation.body);
    expect(withBody.length).toBeGreaterThan(10);
    const failures: string[] = [];
    const send = (operation: Operation, type: string, body: string) => {
      // Path parameters: a known id where one fits, else a value no resource has.
      const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
        name === 'id' || name === 'parent_id' ? knownIds[0]! : 'x',
      );
      return fetch(`${env.stack.url}${path}`, {
        method: operation.method,
        headers: { 'svc-api-key': env.tenant.apiKey, 'content-type': type },
        body,
      });
    };
    for (const operation of withBody) {
      for (const type of operation.bodyTypes) {
        const where = `${operation.method} ${operation.path} (${type})`;
        for (const body of ['', '  \r\n\t', '\uFEFF', '\uFEFF \n']) {
          const response = await send(operation, type, body);
          const problem = (await response.json()) as { errors?: Record<string, string[]> };
          if (response.status !== 400 || !problem.errors?.body) {
            failures.push(`${where} ${JSON.stringify(body)}: ${response.status} ${JSON.stringify(problem)}`);
          }
        }
        // A BOM in front changes nothing: a JSON array (no body here is one) is refused alike
        // with and without it, where a BOM read as content would be malformed JSON.
        const plain = await send(operation, type, '[1]');
        const prefixed = await send(operation, type, '\uFEFF[1]');
        const [plainBody, prefixedBody] = [await plain.json(), await prefixed.json()] as {
          errors?: unknown;
        }[];
        if (
          plain.status !== prefixed.status ||
          JSON.stringify(plainBody!.errors) !== JSON.stringify(prefixedBody!.errors)
        ) {
          failures.push(
            `${where} BOM: ${plain.status} ${JSON.stringify(plainBody)} / ${prefixed.status} ${JSON.stringify(prefixedBody)}`,
          );
        }
      }
    }
    expect(failures).toEqual([]);
  });

  // Deleting the tenant ends every later request with a 401: that operation goes last.
  const last = (operation: Operation) =>
    operation.method === 'DELETE' && operation.path === '/tenants/self' ? 1 : 0;

  it('answers every request below 500, and every 4xx as problem+json', async () => {
    const failures: string[] = [];
    const ordered = [...operations].sort((a, b) => last(a) - last(b));
    for (const [position, operation] of ordered.entries()) {
      const started = Date.now();
      const counts: Record<number, number> = {};
      const result = await fc.check(
        fc.asyncProperty(requestFor(operation, knownIds, resolve), async (request) => {
          const url = `${env.stack.url}${request.path}${request.query ? `?${request.query}` : ''}`;
          const response = await fetch(url, {
            method: operation.method,
            headers: { 'svc-api-key': env.tenant.apiKey, ...request.headers },
            ...(request.body === undefined ? {} : { body: request.body }),
          });
          const text = await response.text();
          counts[response.status] = (counts[response.status] ?? 0) + 1;
          if (response.status >= 500) throw new Error(`${response.status}: ${text.slice(0, 300)}`);
          // A write the read models never caught up with: an event its projection cannot apply.
          if (response.headers.get('x-read-model-lagging') === 'true') {
            throw new Error(`${response.status}, but the read models fell behind: ${text.slice(0, 300)}`);
          }
          if (response.status >= 400) {
            if (!response.headers.get('content-type')?.startsWith('application/problem+json')) {
              throw new Error(`${response.status} without problem+json: ${text.slice(0, 300)}`);
            }
            const problem = JSON.parse(text) as { status?: unknown; title?: unknown };
            if (problem.status !== response.status || typeof problem.title !== 'string') {
              throw new Error(`${response.status} with a malformed problem: ${text.slice(0, 300)}`);
            }
          }
        }),
        // The first failing request as generated (not shrunk): every step of a shrink is another
        // request, some of which wait for lagging read models.
        // A seed per operation: one seed for all would send the same Idempotency-Keys to each
        // operation in turn, and all but the first would answer 422 (key reused).
        { seed: seed + position, numRuns: runsPerOperation, endOnFailure: true },
      );
      const summary = `${operation.method} ${operation.path}: ${JSON.stringify(counts)} in ${Date.now() - started} ms`;
      if (result.failed) {
        failures.push(`${summary}\n${fc.defaultReportMessage(result)}`);
        break;
      }
    }
    expect(failures, `fuzz seed ${seed}`).toEqual([]);
  }, 300_000);
});
