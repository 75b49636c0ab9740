import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Problem, type Principal } from '@tokenvault/platform';
import { eventually } from '@tokenvault/platform/testing';
import {
  AddressAllowlist,
  resolveDestination,
  sendToDestination,
  systemResolver,
  type DestinationResponse,
} from '@tokenvault/destinations';
import {
  ProxyPipeline,
  encodeBody,
  type ProxiedRequest,
  type ProxyStages,
  type StagedProxy,
} from '@tokenvault/proxy';
import { ReactorQueries } from '@tokenvault/reactors';
import { ApplicationQueries } from '@tokenvault/tenancy';
import { uniqueCardNumber } from './support/cards.ts';
import { createReactor } from './support/reactors.ts';
import { everyRedisValue } from './support/redis.ts';
import { useStack } from './support/stack.ts';
import { startHttpDestination, type TestDestination } from './support/destinations.ts';

/**
 * A configured proxy's stages, run as the gateway runs them (the real reactor run queue, BullMQ
 * worker pool and isolated-vm sandbox of a started stack), around a real destination on loopback.
 */
describe('the proxy pipeline: request and response reactors, code transforms', () => {
  const env = useStack({ LOG_LEVEL: 'debug', REACTOR_TIMEOUT_MS: '1500' });
  const cardNumber = uniqueCardNumber();
  let destination: TestDestination;
  let pipeline: ProxyPipeline;
  let reactors: ReactorQueries;
  let caller: Principal;

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    const { runtime } = env.stack.service;
    reactors = new ReactorQueries(runtime.appPool, new ApplicationQueries(runtime.appPool), runtime.vault);
    pipeline = new ProxyPipeline({ runs: runtime.reactorRuns, reactors });
    caller = await runtime.authenticate(env.tenant.apiKey);
  });
  afterAll(async () => destination?.close());

  /** A proxy's stages for one call (`anonymous`: a `require_auth: false` call, no caller). */
  const proxyOf = (fields: Partial<StagedProxy>, anonymous = false): ProxyStages => ({
    proxy: {
      id: randomUUID(),
      tenant_id: env.tenant.tenantId,
      request_transforms: [],
      response_transforms: [],
      configuration: {},
      application_id: env.tenant.applicationId,
      ...fields,
    },
    ...(anonymous ? {} : { caller }),
    requestId: randomUUID(),
  });

  /** A reactor the read side knows (projections may be asynchronous). */
  const reactorOf = async (code: string, configuration?: Record<string, unknown>) => {
    const id = await createReactor(
      env.tenant,
      { code, configuration: Object.keys(configuration ?? {}).map((name) => ({ name, type: 'string' })) },
      { ...(configuration ? { configuration } : {}) },
    );
    await eventually(async () => expect(await reactors.get(env.tenant.tenantId, id)).toBeDefined());
    return id;
  };

  /** What ProxyGateway.forward does after detokenizing: request stages, one send, response stages. */
  const throughProxy = async (stages: ProxyStages, request: ProxiedRequest): Promise<DestinationResponse> => {
    const outgoing = await pipeline.runRequestStage(stages, request);
    const checked = await resolveDestination(
      new URL(`${destination.url}/hook`),
      { allowlist: new AddressAllowlist('127.0.0.1'), resolver: systemResolver },
      'destination_url',
    );
    const answer = await sendToDestination(
      checked,
      { method: 'POST', headers: outgoing.headers, body: encodeBody(outgoing.kind, outgoing.body) },
      { timeoutMs: 5_000, maxResponseBytes: 1_000_000 },
    );
    return pipeline.runResponseStage(stages, answer);
  };

  const jsonRequest = (body: unknown, headers: Record<string, string> = {}): ProxiedRequest => ({
    headers: { 'content-type': 'application/json', ...headers },
    kind: 'json',
    body,
  });

  const received = () =>
    JSON.parse(destination.received.at(-1)!.body.toString('utf8')) as Record<string, unknown>;

  it('forwards what the request reactor answers as raw.body and raw.headers, with its configuration', async () => {
    const reactorId = await reactorOf(
      `module.exports = async function (req) {
        return { raw: {
          headers: { ...req.args.headers, 'x-reactor': req.configuration.tag },
          body: { wrapped: req.args.body },
        } };
      };`,
      { tag: 'outbound' },
    );
    destination.received.length = 0;
    const answer = await throughProxy(
      proxyOf({ request_reactor_id: reactorId }),
      jsonRequest({ amount: 1200 }, { 'x-caller': 'kept' }),
    );
    expect(answer.status).toBe(201);
    expect(destination.received).toHaveLength(1);
    expect(received()).toEqual({ wrapped: { amount: 1200 } });
    expect(destination.received[0]!.headers['x-reactor']).toBe('outbound');
    expect(destination.received[0]!.headers['x-caller']).toBe('kept');
  });

  it('returns what the response reactor makes of the destination’s answer (status kept)', async () => {
    const reactorId = await reactorOf(
      `module.exports = async function (req) {
        return { raw: {
          headers: { 'content-type': 'application/json', 'x-seen': req.args.headers['x-destination'] },
          body: { upstream_method: req.args.body.method },
        } };
      };`,
    );
    const answer = await throughProxy(proxyOf({ response_reactor_id: reactorId }), jsonRequest({ a: 1 }));
    expect(answer.status).toBe(201);
    expect(answer.headers['x-seen']).toBe('echo');
    expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ upstream_method: 'POST' });
  });

  it('an inbound call without auth: a code transform tokenizes the card as the proxy’s application, the destination gets a token id', async () => {
    const stages = proxyOf(
      {
        configuration: { field: 'card' },
        request_transforms: [
          {
            type: 'code',
            code: `module.exports = async function (req) {
            const field = req.configuration.field;
            const token = await req.svc.tokens.create({ type: 'card', data: req.args.body[field] });
            return { headers: req.args.headers, body: { ...req.args.body, [field]: token.id } };
          };`,
          },
        ],
      },
      true,
    );
    destination.received.length = 0;
    const card = { number: cardNumber, expiration_month: 4, expiration_year: 2031, cvc: '123' };
    const answer = await throughProxy(stages, jsonRequest({ event: 'payment', card }));
    expect(answer.status).toBe(201);
    expect(destination.received).toHaveLength(1);
    const forwarded = destination.received[0]!.body.toString('utf8');
    expect(forwarded).not.toContain(cardNumber);
    const tokenId = received().card as string;
    expect(typeof tokenId).toBe('string');
    const token = await env.tenant.client.tokens.get(tokenId);
    expect((token.data as { number: string }).number).toBe(cardNumber);
  });

  it('a request reactor’s tokenize creates tokens as in a react call; without raw.body the tokens are forwarded', async () => {
    const reactorId = await reactorOf(
      `module.exports = async function (req) {
        return { tokenize: { card: { type: 'card', data: req.args.body.card } } };
      };`,
    );
    destination.received.length = 0;
    const card = { number: cardNumber, expiration_month: 5, expiration_year: 2032 };
    await throughProxy(proxyOf({ request_reactor_id: reactorId }), jsonRequest({ card }));
    expect(destination.received[0]!.body.toString('utf8')).not.toContain(cardNumber);
    const forwarded = received() as { card: { id: string; type: string } };
    expect(forwarded.card.type).toBe('card');
    const token = await env.tenant.client.tokens.get(forwarded.card.id);
    expect((token.data as { number: string }).number).toBe(cardNumber);
  });

  it('an anonymous call’s stage without an application can tokenize nothing (403), and nothing is forwarded', async () => {
    const stages = proxyOf(
      {
        application_id: undefined,
        request_transforms: [
          {
            type: 'code',
            code: 'module.exports = async (req) => ({ body: { svc: req.svc === null } });',
          },
        ],
      },
      true,
    );
    destination.received.length = 0;
    await throughProxy(stages, jsonRequest({}));
    expect(received()).toEqual({ svc: true });
    const reactorId = await reactorOf(
      "module.exports = async (req) => ({ tokenize: { t: { type: 'token', data: 'x' } } });",
    );
    destination.received.length = 0;
    const failure = await throughProxy(
      proxyOf({ request_reactor_id: reactorId }, true),
      jsonRequest({}),
    ).catch((error: unknown) => error);
    expect((failure as Problem).status).toBe(403);
    expect(destination.received).toHaveLength(0);
  });

  it('transforms run in order, each on the previous one’s answer, and a response transform rewrites the answer', async () => {
    const stages = proxyOf({
      request_transforms: [
        { type: 'code', code: 'module.exports = async (req) => ({ body: { step: [1] } });' },
        {
          type: 'code',
          code: 'module.exports = async (req) => ({ body: { step: [...req.args.body.step, 2] } });',
        },
      ],
      response_transforms: [
        {
          type: 'code',
          code: `module.exports = async (req) => ({
            headers: { 'content-type': 'text/plain' },
            body: 'answered ' + JSON.parse(req.args.body.body).step.join(','),
          });`,
        },
      ],
    });
    const answer = await throughProxy(stages, jsonRequest({ ignored: true }));
    expect(received()).toEqual({ step: [1, 2] });
    expect(answer.headers['content-type']).toBe('text/plain');
    expect(answer.body.toString('utf8')).toBe('answered 1,2');
  });

  it('a transform that throws is a problem with its status, and nothing is forwarded', async () => {
    const stages = proxyOf({
      request_transforms: [
        {
          type: 'code',
          code: "module.exports = async () => { throw new BadRequestError('card refused'); };",
        },
      ],
    });
    destination.received.length = 0;
    const failure = await throughProxy(stages, jsonRequest({ card: cardNumber })).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Problem);
    expect((failure as Problem).status).toBe(400);
    expect((failure as Problem).detail).toBe('card refused');
    expect(destination.received).toHaveLength(0);
  });

  it('a request reactor that never finishes fails the request, and nothing is forwarded', async () => {
    const reactorId = await reactorOf('module.exports = () => new Promise(() => {});');
    destination.received.length = 0;
    const failure = await throughProxy(
      proxyOf({ request_reactor_id: reactorId }),
      jsonRequest({ card: cardNumber }),
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Problem);
    // As a react call: the sandbox's wall time (REACTOR_TIMEOUT_MS) stops it with a 500.
    expect((failure as Problem).status).toBe(500);
    expect((failure as Problem).detail).toMatch(/wall time/);
    expect(JSON.stringify(failure)).not.toContain(cardNumber);
    expect(destination.received).toHaveLength(0);
  });

  it('a transform that answers no object, or a reactor that does not exist: a problem, nothing forwarded', async () => {
    destination.received.length = 0;
    const notAnObject = await throughProxy(
      proxyOf({ request_transforms: [{ type: 'code', code: "module.exports = async () => 'body';" }] }),
      jsonRequest({ card: cardNumber }),
    ).catch((error: unknown) => error);
    expect((notAnObject as Problem).status).toBe(500);
    expect((notAnObject as Problem).detail).toMatch(/must return an object/);
    const badHeaders = await throughProxy(
      proxyOf({
        request_transforms: [
          { type: 'code', code: "module.exports = async () => ({ headers: { 'x-a': {} } });" },
        ],
      }),
      jsonRequest({}),
    ).catch((error: unknown) => error);
    expect((badHeaders as Problem).status).toBe(422);
    expect((badHeaders as Problem).detail).toContain('request_transforms[0]');
    const headersNotAnObject = await throughProxy(
      proxyOf({
        request_transforms: [{ type: 'code', code: "module.exports = async () => ({ headers: 'x-a' });" }],
      }),
      jsonRequest({}),
    ).catch((error: unknown) => error);
    expect((headersNotAnObject as Problem).status).toBe(422);
    expect((headersNotAnObject as Problem).detail).toBe(
      'The request_transforms[0] answered headers that are not an object.',
    );
    const noReactor = await throughProxy(
      proxyOf({ request_reactor_id: randomUUID() }),
      jsonRequest({ card: cardNumber }),
    ).catch((error: unknown) => error);
    expect((noReactor as Problem).status).toBe(400);
    expect((noReactor as Problem).slug).toBe('invalid-proxy-configuration');
    expect(destination.received).toHaveLength(0);
  });

  it('a response transform that throws: the destination’s answer is not returned', async () => {
    const stages = proxyOf({
      response_transforms: [
        { type: 'code', code: "module.exports = async () => { throw new Error('no'); };" },
      ],
    });
    const failure = await throughProxy(stages, jsonRequest({ a: 1 })).catch((error: unknown) => error);
    expect((failure as Problem).status).toBe(500);
  });

  it('a transform’s run in flight holds the card only sealed in Redis', async () => {
    const stages = proxyOf({
      request_transforms: [
        {
          type: 'code',
          code: `module.exports = async (req) => {
            const until = Date.now() + 1000;
            while (Date.now() < until) {}
            return { body: { seen: req.args.body.card.length } };
          };`,
        },
      ],
    });
    const running = throughProxy(stages, jsonRequest({ card: cardNumber }));
    // This stack's queue jobs only (Redis is shared: a scan of all of it may outlast the run).
    const inFlight = await eventually(async () => {
      const values = await everyRedisValue(env.stack.config.REDIS_URL, `${env.stack.config.QUEUE_PREFIX}:*`);
      // The transform's job, named by its owner (code-runs: `proxies/<id>`).
      expect(values.some((value) => value.includes(`"owner":"proxies/${stages.proxy.id}"`))).toBe(true);
      return values;
    });
    expect(inFlight.filter((value) => value.includes(cardNumber))).toEqual([]);
    await running;
    expect(received()).toEqual({ seen: cardNumber.length });
  });

  it('leaves the card number nowhere in Redis (runs and their outcomes are sealed)', async () => {
    const values = await everyRedisValue(env.stack.config.REDIS_URL);
    expect(values.length).toBeGreaterThan(0);
    expect(values.filter((value) => value.includes(cardNumber))).toEqual([]);
    expect(env.stack.logs.filter((line) => line.includes(cardNumber))).toEqual([]);
  });
});
