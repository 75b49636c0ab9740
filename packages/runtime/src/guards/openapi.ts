import { sensitiveData, type SensitiveData } from '@tokenvault/platform';
import { idempotencyKeyPattern } from './idempotency.ts';

// What the route guard adds to every API-key operation, written into the OpenAPI document: the
// guard sits outside the routes, so their own schemas cannot say it.

interface Operation {
  'x-permission'?: string;
  /** The route's `returnsSensitive`: its responses are never kept for a replay. */
  'x-returns-sensitive'?: SensitiveData[];
  parameters?: unknown[];
  responses?: Record<string, Response | { $ref: string }>;
}

interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: unknown;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components?: Record<string, Record<string, unknown> | undefined>;
}

const problemContent = {
  'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
};

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

const rateLimitHeaders = {
  'RateLimit-Policy': header('RateLimit-Policy'),
  RateLimit: header('RateLimit'),
};

const keyDescription =
  'Makes a retry safe: the first completed response under this key (per application) is kept for ' +
  'IDEMPOTENCY_TTL_SECONDS (24 h by default), sealed under the tenant’s key, and replayed, with ' +
  '`Idempotency-Replayed: true`, to the same request. An operation whose responses can hold token ' +
  'data or a secret (`x-returns-sensitive`: a search, a reactor’s answer, a new API key) keeps only ' +
  'that it completed and its status: the same request is not run again but answered 409 ' +
  '(`idempotency-response-not-kept`, saying why). A token write (`x-returns-sensitive`: ' +
  '`token-summary` only) is kept and replayed without its tokens’ `card`, `bank` and ' +
  '`fingerprint`, which follow the caller’s read decision at the time (`Idempotency-Withheld-Fields`). ' +
  'The same key with another ' +
  'method, path or body is a 422; while the first request runs, a 409. 1–255 printable ASCII ' +
  'characters, else a 400.';

const components = {
  parameters: {
    'Idempotency-Key': {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: keyDescription,
      schema: { type: 'string', pattern: idempotencyKeyPattern.source },
    },
    'SVC-IDEMPOTENCY-KEY': {
      name: 'SVC-IDEMPOTENCY-KEY',
      in: 'header',
      required: false,
      description: 'An alias of `Idempotency-Key`; when both are sent they must be equal.',
      schema: { type: 'string', pattern: idempotencyKeyPattern.source },
    },
  },
  headers: {
    'RateLimit-Policy': {
      description:
        'On every answer to a valid API key: its quota (IETF httpapi RateLimit headers draft), ' +
        '`"default";q=6000;w=60`, or `"application"` when the application has its own `rate_limit`.',
      schema: { type: 'string' },
    },
    RateLimit: {
      description:
        'Requests left now (`r`) and seconds until the quota is full again (`t`): `"default";r=5999;t=1`.',
      schema: { type: 'string' },
    },
    'Retry-After': {
      description: 'Seconds to wait before retrying.',
      schema: { type: 'integer', minimum: 1 },
    },
    'Idempotency-Replayed': {
      description:
        '`true` when this is the kept response to an earlier request with the same Idempotency-Key.',
      schema: { type: 'string', enum: ['true'] },
    },
    'Idempotency-Withheld-Fields': {
      description:
        'On a replay of a token write: the fields of its tokens not kept with its response ' +
        '(`card, bank, fingerprint`: they follow the caller’s read decision at the time; read the ' +
        'token for them now).',
      schema: { type: 'string' },
    },
  },
  responses: {
    TooManyRequests: {
      description:
        'Too many requests: the API key has used its quota (see RateLimit), or another limit of the ' +
        'operation is reached (reactor invocations in flight per tenant, e-mails per invitation). ' +
        'Nothing was done; retry after Retry-After seconds.',
      headers: { 'Retry-After': header('Retry-After'), ...rateLimitHeaders },
      content: problemContent,
    },
    IdempotencyKeyInUse: {
      description:
        'A request with this Idempotency-Key is still running (`idempotency-key-in-use`); retry ' +
        'after Retry-After seconds to get its response.',
      headers: { 'Retry-After': header('Retry-After'), ...rateLimitHeaders },
      content: problemContent,
    },
    IdempotencyResponseNotKept: {
      description:
        'The first request with this Idempotency-Key completed, and this operation’s responses ' +
        'can hold what is never kept (`x-returns-sensitive`; `idempotency-response-not-kept`): it ' +
        'is not run again; send a new Idempotency-Key to run it again.',
      headers: rateLimitHeaders,
      content: problemContent,
    },
    IdempotencyKeyReused: {
      description:
        'This Idempotency-Key was used for a different request: another method, path or body ' +
        '(`idempotency-key-reused`).',
      headers: rateLimitHeaders,
      content: problemContent,
    },
  },
};

const idempotentMethods = new Set(['post', 'put', 'patch']);

/** The operation's Idempotency-Key parameter, saying what this operation does not keep, and why. */
function withheldBecause(operation: Operation, returns: readonly SensitiveData[]) {
  operation.parameters = (operation.parameters ?? []).map((parameter) =>
    (parameter as { $ref?: string }).$ref === '#/components/parameters/Idempotency-Key'
      ? {
          ...structuredClone(components.parameters['Idempotency-Key']),
          description:
            `${keyDescription} This operation’s responses are never kept: they can hold ` +
            `${returns.map((kind) => sensitiveData[kind]).join('; ')}.`,
        }
      : parameter,
  );
}

/**
 * Declares a response the guard may give; a route's own response of that status says both, and
 * a second one the guard adds makes the first a copy that says both (its headers joined).
 */
function addResponse(operation: Operation, status: string, name: keyof typeof components.responses) {
  const responses = (operation.responses ??= {});
  const declared = responses[status];
  const added = components.responses[name];
  if (!declared) responses[status] = { $ref: `#/components/responses/${name}` };
  else if (!('$ref' in declared)) declared.description += ` Or: ${added.description}`;
  else {
    const guardsOwn = Object.entries(components.responses).find(
      ([own]) => declared.$ref === `#/components/responses/${own}`,
    );
    if (!guardsOwn) return;
    const first = structuredClone(guardsOwn[1]);
    responses[status] = {
      ...first,
      description: `${first.description} Or: ${added.description}`,
      headers: { ...first.headers, ...structuredClone(added.headers) },
    };
  }
}

/**
 * The document with what every API-key operation may also answer: the RateLimit headers and a
 * 429; on POST, PUT and PATCH the Idempotency-Key header (and its alias), the
 * Idempotency-Replayed header, and the 409 and 422 of a key in use or reused (and, where the
 * responses can hold token data or a secret, `x-returns-sensitive`, the 409 of a response not kept).
 */
export function describeRouteGuard<D extends OpenApiDocument>(document: D): D {
  const copy = structuredClone(document);
  const shared = (copy.components ??= {});
  for (const [section, entries] of Object.entries(components)) {
    shared[section] = { ...shared[section], ...structuredClone(entries) };
  }
  for (const operations of Object.values(copy.paths)) {
    for (const [method, value] of Object.entries(operations)) {
      const operation = value as Operation;
      if (operation['x-permission'] === undefined) continue;
      const idempotent = idempotentMethods.has(method);
      const returns = operation['x-returns-sensitive'] ?? [];
      // Kept without the tokens' summaries and fingerprints (the idempotency guard).
      const summariesOnly = returns.length > 0 && returns.every((kind) => kind === 'token-summary');
      const withheld = idempotent && returns.length > 0 && !summariesOnly;
      for (const response of Object.values(operation.responses ?? {})) {
        if ('$ref' in response) continue;
        response.headers = {
          ...response.headers,
          ...rateLimitHeaders,
          ...(idempotent && !withheld ? { 'Idempotency-Replayed': header('Idempotency-Replayed') } : {}),
          ...(idempotent && summariesOnly
            ? { 'Idempotency-Withheld-Fields': header('Idempotency-Withheld-Fields') }
            : {}),
        };
      }
      addResponse(operation, '429', 'TooManyRequests');
      if (!idempotent) continue;
      operation.parameters = [
        ...(operation.parameters ?? []),
        { $ref: '#/components/parameters/Idempotency-Key' },
        { $ref: '#/components/parameters/SVC-IDEMPOTENCY-KEY' },
      ];
      if (withheld) {
        addResponse(operation, '409', 'IdempotencyResponseNotKept');
        withheldBecause(operation, returns);
      }
      addResponse(operation, '409', 'IdempotencyKeyInUse');
      addResponse(operation, '422', 'IdempotencyKeyReused');
    }
  }
  // A response joined into another's description is referenced nowhere: not declared either.
  const referenced = JSON.stringify(copy.paths);
  for (const name of Object.keys(components.responses)) {
    if (!referenced.includes(`"#/components/responses/${name}"`)) delete shared.responses?.[name];
  }
  return copy;
}
