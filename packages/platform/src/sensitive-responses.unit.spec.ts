import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineRoute, type RouteDefinition } from './route.ts';
import { sensitiveIn, undeclaredSensitive } from './sensitive-responses.ts';

const route = (responseSchema: z.ZodType, returnsSensitive: RouteDefinition['returnsSensitive'] = []) =>
  defineRoute({
    method: 'post',
    path: '/new-things',
    operationId: 'createNewThing',
    summary: 'A route a later change adds',
    tag: 'Spec',
    permission: 'thing:create',
    returnsSensitive,
    responses: { 201: { description: 'Created', schema: responseSchema } },
    handle: () => Promise.resolve({ status: 201 }),
  });

describe('what a route can return, read from its response schemas', () => {
  // A token's data is any JSON value (z.json()); a page's `data` is a list of described items.
  const token = z.object({
    id: z.string(),
    data: z.json().optional(),
    metadata: z.record(z.string(), z.string()),
  });

  it('finds a token’s data, in a token or a page of tokens, not in a page of other things', () => {
    expect(sensitiveIn(token)).toEqual([{ kind: 'token-data', at: '.data' }]);
    expect(sensitiveIn(z.object({ data: z.array(token) }))).toEqual([
      { kind: 'token-data', at: '.data[].data' },
    ]);
    expect(sensitiveIn(z.object({ data: z.array(z.object({ id: z.string() })) }))).toEqual([]);
    expect(sensitiveIn(token.omit({ data: true }))).toEqual([]);
  });

  it('finds a token’s card and bank summaries and fingerprint, declared by token-summary or token-data', () => {
    const written = token.omit({ data: true }).extend({
      fingerprint: z.string().optional(),
      card: z.object({ bin: z.string(), last4: z.string() }).optional(),
      bank: z.object({ routing_number: z.string() }).optional(),
      fingerprint_expression: z.string().optional(),
    });
    expect(sensitiveIn(written)).toEqual([
      { kind: 'token-summary', at: '.fingerprint' },
      { kind: 'token-summary', at: '.card' },
      { kind: 'token-summary', at: '.bank' },
    ]);
    expect(undeclaredSensitive(route(written))).toEqual([
      'post /new-things 201 .fingerprint: a card or bank summary or a fingerprint, not in returnsSensitive (token-summary)',
      'post /new-things 201 .card: a card or bank summary or a fingerprint, not in returnsSensitive (token-summary)',
      'post /new-things 201 .bank: a card or bank summary or a fingerprint, not in returnsSensitive (token-summary)',
    ]);
    expect(undeclaredSensitive(route(written, ['token-summary']))).toEqual([]);
    // A route that keeps no answer at all (token data) keeps none of its summaries either.
    expect(undeclaredSensitive(route(written, ['token-data']))).toEqual([]);
    expect(undeclaredSensitive(route(written, ['api-key']))).toHaveLength(3);
  });

  it('finds a secret by its name, not a public key or a key’s id', () => {
    const answer = z.object({
      id: z.string(),
      key: z.string(),
      key_id: z.string(),
      nested: z.object({ session_token: z.string(), signing_secret: z.string().optional() }),
      public_key: z.string(),
    });
    expect(sensitiveIn(answer).map(({ at }) => at)).toEqual([
      '.key',
      '.nested.session_token',
      '.nested.signing_secret',
    ]);
  });

  it('finds any JSON: a field of anything, or the whole response any object or list', () => {
    expect(sensitiveIn(z.object({ raw: z.unknown() }))).toEqual([{ kind: 'any JSON', at: '.raw' }]);
    expect(sensitiveIn(z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]))).toEqual([
      { kind: 'any JSON', at: '(the whole response).*' },
      { kind: 'any JSON', at: '(the whole response)[]' },
    ]);
  });

  it('finds a configuration map (a processor’s credentials), but not a list of configuration declarations', () => {
    const reactor = z.object({ configuration: z.record(z.string(), z.unknown()) });
    expect(sensitiveIn(reactor)).toEqual([{ kind: 'configuration', at: '.configuration' }]);
    expect(sensitiveIn(z.object({ configuration: z.record(z.string(), z.string()) }))).toEqual([
      { kind: 'configuration', at: '.configuration' },
    ]);
    const formula = z.object({ configuration: z.array(z.object({ name: z.string(), type: z.string() })) });
    expect(sensitiveIn(formula)).toEqual([]);
    expect(undeclaredSensitive(route(reactor))).toEqual([
      'post /new-things 201 .configuration: a configuration (credentials), not in returnsSensitive',
    ]);
    // A proxy key does not cover it: each kind is declared.
    expect(undeclaredSensitive(route(reactor, ['proxy-key']))).toHaveLength(1);
    expect(undeclaredSensitive(route(reactor, ['configuration']))).toEqual([]);
  });

  it('fails a new route that answers a key, a token or any JSON without declaring it, and passes it declared', () => {
    const withKey = z.object({ id: z.string(), key: z.string() });
    expect(undeclaredSensitive(route(withKey))).toEqual([
      'post /new-things 201 .key: a secret, returnsSensitive names none (api-key, session-token, signing-secret, proxy-key)',
    ]);
    expect(undeclaredSensitive(route(withKey, ['token-data']))).toHaveLength(1);
    expect(undeclaredSensitive(route(withKey, ['api-key']))).toEqual([]);
    expect(undeclaredSensitive(route(token))).toEqual([
      'post /new-things 201 .data: token data, not in returnsSensitive',
    ]);
    expect(undeclaredSensitive(route(token, ['token-data']))).toEqual([]);
    expect(undeclaredSensitive(route(z.object({ raw: z.unknown() })))).toHaveLength(1);
    expect(
      undeclaredSensitive(route(z.object({ raw: z.unknown() })), { 'post /new-things': 'reviewed' }),
    ).toEqual([]);
  });
});
