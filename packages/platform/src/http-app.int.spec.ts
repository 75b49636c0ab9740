import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alreadyExists,
  conflictError,
  goneError,
  invalidCommand,
  notAllowed,
  notFoundError,
  unprocessableCommand,
  type DomainError,
} from './domain-errors.ts';
import { Problem } from './errors.ts';
import { createHttpApp, finishHttpApp, mountRoutes } from './http-app.ts';
import { createLogger } from './logger.ts';
import { defineRoute, type RouteDefinition } from './route.ts';

/**
 * A decider's DomainError, thrown through a route, against the Problem the same refusal was
 * thrown as before deciders spoke in domain words: the central handler answers both alike, byte
 * for byte.
 */
const cases: { name: string; refusal: DomainError; before: Problem }[] = [
  {
    name: 'invalid, with fields',
    refusal: invalidCommand('A token cannot be its own child.', {
      'path.child_id': ['Must differ from parent_id'],
    }),
    before: new Problem(400, 'bad-request', 'Bad Request', 'A token cannot be its own child.', {
      'path.child_id': ['Must differ from parent_id'],
    }),
  },
  {
    name: 'invalid, with a code of its own',
    refusal: invalidCommand(
      'The reactor’s configuration no longer satisfies its formula; update the reactor.',
      { 'body.configuration.API_KEY': ['Required'] },
      'invalid-reactor-configuration',
    ),
    before: new Problem(
      400,
      'invalid-reactor-configuration',
      'Bad Request',
      'The reactor’s configuration no longer satisfies its formula; update the reactor.',
      { 'body.configuration.API_KEY': ['Required'] },
    ),
  },
  {
    name: 'not allowed',
    refusal: notAllowed('This API key lacks token:delete on the token’s containers.'),
    before: new Problem(
      403,
      'forbidden',
      'Forbidden',
      'This API key lacks token:delete on the token’s containers.',
    ),
  },
  {
    name: 'not allowed, with fields',
    refusal: notAllowed(
      'This API key cannot grant a type, permission or rule it does not hold itself; see errors.',
      {
        'body.permissions': ['token:use is not held by this key'],
      },
    ),
    before: new Problem(
      403,
      'forbidden',
      'Forbidden',
      'This API key cannot grant a type, permission or rule it does not hold itself; see errors.',
      { 'body.permissions': ['token:use is not held by this key'] },
    ),
  },
  {
    name: 'not found',
    refusal: notFoundError('No token with this id.'),
    before: new Problem(404, 'not-found', 'Not Found', 'No token with this id.'),
  },
  {
    name: 'already exists',
    refusal: alreadyExists('A token with this id exists.'),
    before: new Problem(409, 'conflict', 'Conflict', 'A token with this id exists.'),
  },
  {
    name: 'conflict',
    refusal: conflictError('2 reactor(s) use this formula: delete them before the formula.'),
    before: new Problem(
      409,
      'conflict',
      'Conflict',
      '2 reactor(s) use this formula: delete them before the formula.',
    ),
  },
  {
    name: 'gone',
    refusal: goneError('This invitation has expired: ask for it to be sent again.'),
    before: new Problem(410, 'gone', 'Gone', 'This invitation has expired: ask for it to be sent again.'),
  },
  {
    name: 'unprocessable, with fields',
    refusal: unprocessableCommand('The formula code does not compile.', {
      'body.code': ['Unexpected token'],
    }),
    before: new Problem(422, 'unprocessable', 'Unprocessable Entity', 'The formula code does not compile.', {
      'body.code': ['Unexpected token'],
    }),
  },
];

const throwing = (path: string, error: Error): RouteDefinition =>
  defineRoute({
    method: 'post',
    path,
    operationId: 'throwForTheSpec',
    summary: 'Throws what the spec gives it.',
    tag: 'Spec',
    permission: null,
    returnsSensitive: [],
    responses: {},
    handle: async () => {
      throw error;
    },
  });

let server: Server;
let base: string;

beforeAll(async () => {
  const logger = createLogger('silent');
  const routes = cases.flatMap(({ refusal, before }, index) => [
    throwing(`/refusal/${index}`, refusal),
    throwing(`/before/${index}`, before),
  ]);
  const app = createHttpApp({
    logger,
    bodyLimit: '1kb',
    configure: (configured) =>
      mountRoutes(configured, routes, async () => {
        throw new Error('no route of this spec needs an API key');
      }),
  });
  finishHttpApp(app, logger);
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** The answer as it goes on the wire, but for the headers every answer carries alike. */
async function answer(path: string, requestId: string) {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'x-request-id': requestId } });
  const { date: _date, ...headers } = Object.fromEntries(response.headers);
  return { status: response.status, headers, body: await response.text() };
}

describe('the central handler answers a DomainError thrown by a route', () => {
  it.each(cases.map((item, index) => [item.name, index] as const))(
    '%s: as the Problem it was thrown as before',
    async (_name, index) => {
      const requestId = `domain-errors-${index}`;
      const refused = await answer(`/refusal/${index}`, requestId);
      expect(refused).toEqual(await answer(`/before/${index}`, requestId));
      expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(JSON.parse(refused.body)).toEqual({ ...cases[index]!.before.toJSON(), request_id: requestId });
    },
  );
});
