// Tenant code's errors in the service's log. The service's log leaves the cardholder-data
// environment (log shippers, an operator's terminal, a support ticket): no card number may reach
// it. Tenant code, written carelessly or on purpose, fails with the card it was given in its
// error: `throw new Error('declined card ' + req.args.card.number)`, as a reactor invoked with
// `react` or `react-async`, as a proxy's request or response reactor, as a proxy's code transform
// on the way out or on the way back, or as an SDK error class (`ReactorRuntimeError`, 503
// `ServiceUnavailableError`, with `errors`), or a thrown string. The error's message, stack and
// detail must not be logged (only an error id, its class, the reactor or proxy and the request),
// in any form (the number with or without separators), whatever the level; the caller gets the
// problem the reactor docs describe, never a stack. A stage answering the card as a header name
// HTTP refuses (node:http's error quotes it), and a tenant's detokenization expression that fails
// on the card (a filter refusing it), are checked the same way.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '@tokenvault/platform/testing';
import { uniqueCardNumber } from '../support/cards.ts';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { createReactor } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  status?: number;
  detail?: string;
  errors?: Record<string, string[]>;
  stack?: unknown;
  request_id?: string;
}

describe('attack: tenant code throws the card number it was given, and it reaches the log', () => {
  // Every level, so that nothing hides below the default.
  const env = useStack({ LOG_LEVEL: 'debug', PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  const cardNumber = uniqueCardNumber();
  // The number as tenant code may format it: grouped by four with spaces.
  const grouped = `(number.match(/.{1,4}/g) || []).join(' ')`;
  let destination: TestDestination;
  let cardId: string;

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    cardId = (
      await env.tenant.client.tokens.create({
        type: 'card',
        data: { number: cardNumber, expiration_month: 4, expiration_year: 2031 },
      })
    ).id;
  });
  afterAll(async () => destination?.close());

  // Each test reads the lines logged since it began (the last one reads them all).
  let firstLine = 0;
  beforeEach(() => {
    firstLine = env.stack.logs.length;
  });
  const holdsTheCard = (text: string) =>
    text.includes(cardNumber) || text.replace(/[\s.\-_/]/g, '').includes(cardNumber);
  /** The lines holding the number, as it is or with its separators (spaces, dashes, dots) removed. */
  const linesWithTheCard = (from = firstLine) => env.stack.logs.slice(from).filter(holdsTheCard);
  /** Whether the log holds it, a line break or a line's end included. */
  const logHoldsTheCard = (from = firstLine) => holdsTheCard(env.stack.logs.slice(from).join(''));

  /** The caller's answer carries no stack: no `stack` member, no frame of the reactor's code. */
  const expectNoStack = (answer: Answer) => {
    expect(answer).not.toHaveProperty('stack');
    expect(JSON.stringify(answer)).not.toMatch(/reactor\.js|\bat [^ ]+ \(|\n\s+at /);
  };

  const reactorThrowing = (body: string) =>
    createReactor(env.tenant, {
      code: `module.exports = async function (req) { const number = req.args.card.number; ${body} };`,
      request_parameters: [{ name: 'card', type: 'object' }],
    });
  const react = (reactorId: string) =>
    env.tenant.client.request<Answer>('POST', `/reactors/${reactorId}/react`, {
      body: { args: { card: `{{ ${cardId} }}` } },
    });

  it('a reactor throwing new Error("declined card " + number): 500 as documented, nothing of it logged', async () => {
    const reactorId = await reactorThrowing(
      `throw new Error('declined card ' + number + ' (' + ${grouped} + ')');`,
    );
    const answer = await react(reactorId);
    expect(answer.status).toBe(500);
    // docs/reactors.md: the class's status, `detail` = the message (the anchor's SDK does the same).
    expect(answer.body.detail).toContain('declined card');
    expectNoStack(answer.body);
    expect(linesWithTheCard()).toEqual([]);
    // The failure is logged (a warning: the tenant's, not the service's), by its id and class,
    // with the request's id and the reactor's.
    const logged = env.stack.logs.slice(firstLine).filter((line) => line.includes(answer.body.request_id!));
    const failure = logged.find((line) => line.includes('"err"'));
    expect(failure, logged.join('')).toBeDefined();
    const { err, level, msg } = JSON.parse(failure!) as {
      err: Record<string, unknown>;
      level: number;
      msg: string;
    };
    expect({ level, msg }).toEqual({ level: 40, msg: 'tenant code failed' });
    expect(err).toEqual({
      type: 'ReactorRuntimeError',
      tenantCode: true,
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      source: `reactors/${reactorId}`,
    });
  });

  it('SDK error classes (500 with errors, 503) and a thrown string: nothing of them logged', async () => {
    for (const body of [
      `throw new ReactorRuntimeError({ card: ['declined ' + number] });`,
      `throw new ReactorRuntimeError('declined ' + ${grouped});`,
      `throw new ServiceUnavailableError('processor down for ' + number);`,
      `throw 'declined ' + number;`,
      `const { BadRequestError } = require('@basis-theory/basis-theory-reactor-formulas-sdk-js'); throw new BadRequestError('bad ' + number);`,
    ]) {
      const answer = await react(await reactorThrowing(body));
      expect([400, 500, 503], body).toContain(answer.status);
      expectNoStack(answer.body);
      expect(linesWithTheCard(), body).toEqual([]);
    }
  });

  it('react-async: the failed run is answered on polling, and nothing of it logged', async () => {
    const reactorId = await reactorThrowing(`throw new Error('declined card ' + number);`);
    const accepted = await env.tenant.client.request<{ async_reactor_request_id: string }>(
      'POST',
      `/reactors/${reactorId}/react-async`,
      { body: { args: { card: `{{ ${cardId} }}` } } },
    );
    expect(accepted.status).toBe(202);
    const polled = await eventually(async () => {
      const result = await env.tenant.client.request<{ status: string; error?: Answer }>(
        'GET',
        `/reactors/${reactorId}/results/${accepted.body.async_reactor_request_id}`,
      );
      expect(result.body.status).toBe('failed');
      return result.body;
    }, 20_000);
    expect(polled.error?.status).toBe(500);
    expectNoStack(polled.error!);
    expect(linesWithTheCard()).toEqual([]);
  });

  describe('a proxy’s stages', () => {
    const createProxy = async (fields: Record<string, unknown>) => {
      const created = await env.tenant.client.request<{ id: string; key: string }>('POST', '/proxies', {
        body: { name: 'Payments', destination_url: `${destination.url}/charges`, ...fields },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return created.body;
    };
    const callProxy = async (key: string) => {
      const response = await fetch(`${env.stack.url}/proxy`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'svc-api-key': env.tenant.apiKey,
          'svc-proxy-key': key,
        },
        body: JSON.stringify({ card: { number: `{{ ${cardId} | json: '$.number' }}` } }),
      });
      return { status: response.status, body: (await response.json()) as Answer };
    };
    const throwing = (what: string) =>
      `module.exports = async function (req) {
        const body = typeof req.args.body === 'string' ? req.args.body : JSON.stringify(req.args.body);
        const number = (body.match(/\\d{13,19}/) || [''])[0];
        throw new Error('${what} declined card ' + number + ' (' + ${grouped} + ')');
      };`;

    it('a request transform (code) throwing the card: 500, nothing sent, nothing of it logged', async () => {
      const proxy = await createProxy({ request_transforms: [{ type: 'code', code: throwing('request') }] });
      destination.received.length = 0;
      const answer = await callProxy(proxy.key);
      expect(answer.status).toBe(500);
      expect(destination.received).toEqual([]);
      expectNoStack(answer.body);
      expect(linesWithTheCard()).toEqual([]);
    });

    it('a response transform (code) throwing the card the destination echoed: 500, nothing of it logged', async () => {
      const proxy = await createProxy({
        response_transforms: [{ type: 'code', code: throwing('response') }],
      });
      destination.received.length = 0;
      const answer = await callProxy(proxy.key);
      expect(answer.status).toBe(500);
      expect(destination.received).toHaveLength(1);
      expect(destination.received[0]!.body.toString('utf8')).toContain(cardNumber);
      expectNoStack(answer.body);
      expect(linesWithTheCard()).toEqual([]);
    });

    it('a stage answering the card as a header name or value HTTP refuses: a 422, nothing of it logged', async () => {
      const answering = (where: string) =>
        `module.exports = async function (req) {
          const body = typeof req.args.body === 'string' ? req.args.body : JSON.stringify(req.args.body);
          const number = (body.match(/\\d{13,19}/) || [''])[0];
          return { headers: { ${where} }, body: req.args.body };
        };`;
      for (const where of [
        `['x card ' + ${grouped}]: 'yes'`,
        `'x-card': 'declined\\n' + number`,
        `'x-card': 'declined ' + number + '\\u00e9\\u2028'`,
      ]) {
        for (const direction of ['request_transforms', 'response_transforms']) {
          const proxy = await createProxy({ [direction]: [{ type: 'code', code: answering(where) }] });
          const answer = await callProxy(proxy.key);
          expect(answer.status, `${direction} ${where}`).toBe(422);
          expectNoStack(answer.body);
          expect(linesWithTheCard(), `${direction} ${where}`).toEqual([]);
        }
      }
    });

    it('a request reactor throwing the card: 500, nothing of it logged', async () => {
      const reactorId = await createReactor(env.tenant, { code: throwing('reactor') });
      const proxy = await createProxy({ request_reactor_id: reactorId });
      const answer = await callProxy(proxy.key);
      expect(answer.status).toBe(500);
      expectNoStack(answer.body);
      expect(linesWithTheCard()).toEqual([]);
    });
  });

  it('a detokenization expression whose filter refuses the card: a 400 that quotes nothing of it, nothing logged', async () => {
    const reactorId = await createReactor(env.tenant, {
      code: 'module.exports = async (req) => ({ raw: req.args });',
      request_parameters: [{ name: 'flag', type: 'string' }],
    });
    for (const expression of [
      `{{ ${cardId} | json: '$.number' | to_boolean }}`,
      `{{ ${cardId} | json: '$.number' | card_exp: 'MM' }}`,
      `{{ ${cardId} | json: '$.number' | slice: 0, 99999999 }}`,
    ]) {
      const answer = await env.tenant.client.request<Answer>('POST', `/reactors/${reactorId}/react`, {
        body: { args: { flag: expression } },
      });
      expect(answer.status, expression).toBe(400);
      expect(JSON.stringify(answer.body)).not.toContain(cardNumber);
      expectNoStack(answer.body);
    }
    expect(logHoldsTheCard()).toBe(false);
  });

  it('after all of it, the card number is nowhere in the log (with or without separators)', () => {
    expect(linesWithTheCard(0)).toEqual([]);
    expect(logHoldsTheCard(0)).toBe(false);
  });
});
