import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type RouteDefinition } from '@tokenvault/platform';
import {
  createTestDatabase,
  sensitiveIn,
  undeclaredSensitive,
  type TestDatabase,
} from '@tokenvault/platform/testing';
import {
  proxySchema,
  reactorFormulaSchema,
  reactorSchema,
  tokenCursorPageV2Schema,
  tokenSchema,
  writtenTokenSchema,
} from '@tokenvault/contracts';
import { apiOperations } from './gateway.ts';
import { allMigrations, createRuntime, type Runtime } from './runtime.ts';

// Every route of the service says what its responses can hold that nothing may keep
// (`returnsSensitive`; the idempotency guard keeps no response of such a route). This reads what
// each route can return from its response schemas (`sensitiveIn`), independently of what it
// declares, and fails when a route can return token data or a secret it does not declare: a new
// route that answers a key, a session token or a token's data without saying so fails here.

/**
 * Routes whose response is any JSON yet holds neither token data nor a secret, each with why: a
 * reviewer's word, in one place. Anything else answering any JSON must declare what it can hold.
 */
const reviewedAnyJson: Record<string, string> = {
  'post /tokenize':
    'the body as sent, each token request answered by its token without data (tokenizeResponseSchema): ' +
    'the caller’s own JSON, no stored data; its tokens’ summaries and fingerprints are declared (token-summary)',
};

describe('token schemas', () => {
  it('hold data in a token and a page of tokens, and only its summaries in a token as writes answer it', () => {
    const summaries = (at: string) =>
      ['fingerprint', 'card', 'bank'].map((name) => ({ kind: 'token-summary', at: `${at}.${name}` }));
    expect(sensitiveIn(tokenSchema)).toEqual([{ kind: 'token-data', at: '.data' }, ...summaries('')]);
    expect(sensitiveIn(tokenCursorPageV2Schema)).toEqual([
      { kind: 'token-data', at: '.data[].data' },
      ...summaries('.data[]'),
    ]);
    expect(sensitiveIn(writtenTokenSchema)).toEqual(summaries(''));
  });
});

describe('configuration schemas', () => {
  it('hold a configuration in a reactor and a proxy, and none in a formula (its declarations)', () => {
    expect(sensitiveIn(reactorSchema)).toEqual([{ kind: 'configuration', at: '.configuration' }]);
    expect(sensitiveIn(proxySchema)).toContainEqual({ kind: 'configuration', at: '.configuration' });
    expect(sensitiveIn(reactorFormulaSchema)).toEqual([]);
  });
});

describe('every route of the service', () => {
  let database: TestDatabase;
  let runtime: Runtime;
  let routes: RouteDefinition[];

  beforeAll(async () => {
    database = await createTestDatabase(allMigrations);
    runtime = await createRuntime(
      loadConfig({
        NODE_ENV: 'test',
        DATABASE_URL: database.url,
        MASTER_KEY: randomBytes(32).toString('base64'),
        LOG_LEVEL: 'warn',
        QUEUE_PREFIX: `tv-test-route-returns-${randomUUID().slice(0, 8)}`,
      }),
    );
    // As the OpenAPI document lists them (GET /openapi.json, the SDK).
    routes = apiOperations(runtime);
  });
  afterAll(async () => {
    await runtime?.close();
    await database?.drop();
  });

  it('declares every kind of token data or secret its responses can hold', () => {
    expect(routes.length).toBeGreaterThan(80);
    expect(routes.flatMap((route) => undeclaredSensitive(route, reviewedAnyJson))).toEqual([]);
  });

  it('declares what those searches, reads, keys and secrets return', () => {
    const declared = Object.fromEntries(
      routes.map((each) => [`${each.method} ${each.path}`, [...each.returnsSensitive]]),
    );
    expect(declared).toMatchObject({
      'post /v2/tokens/search': ['token-data'],
      'post /tokens/search': ['token-data'],
      'post /detokenize': ['token-data'],
      'post /reactors/:id/react': ['token-data'],
      'post /applications': ['api-key'],
      'post /applications/:id/keys': ['api-key'],
      'post /sessions': ['session-token'],
      'post /webhooks/signing-key/rotate': ['signing-secret'],
      'post /proxies': ['proxy-key', 'configuration'],
      // A reactor's configuration is a processor's credentials: its answers are not kept either.
      'post /reactors': ['configuration'],
      'put /reactors/:id': ['configuration'],
      'patch /reactors/:id': ['configuration'],
      // A formula declares configuration names and types, no values.
      'post /reactor-formulas': [],
      // Writes answer a token without its data, with its summaries and fingerprint as the
      // caller's read decision showed them: kept for a retry without those.
      'post /tokens': ['token-summary'],
      'patch /tokens/:id': ['token-summary'],
      'post /tokens/:parent_id/children': ['token-summary'],
      'post /token-intents': ['token-summary'],
      'post /tokenize': ['token-summary'],
    });
  });
});
