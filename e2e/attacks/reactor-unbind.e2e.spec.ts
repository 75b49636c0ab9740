// Unbinding from the attacker's side (issue 48, finding 8). The owner's reactor runs as a card
// reader (an application holding token:read); the owner's proxy runs as it too, and calls that
// reactor on each request. The attacker holds a key of the same tenant with reactor:update,
// proxy:update and token:use, but not token:read: it may not bind the card reader, so it may not
// change what runs as it either. Yet `application: null` (or a PUT without an application, or a
// proxy's reactor set to null) is no binding at all: a check of only what the write binds lets it
// rewrite the reactor's configuration or the proxy's destination while unbinding the card reader
// (the owner's integration breaks: integrity, denial of service). Deleting them is the same denial
// of service, as a lesser key revoking a greater application's keys is.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpDestination, type TestDestination } from '../support/destinations.ts';
import { createReactor } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Answer {
  id: string;
  application?: { id: string };
  errors?: Record<string, string[]>;
}

describe('attack: a lesser key unbinds the application a reactor or proxy runs as, and rewrites it', () => {
  const env = useStack({ LOG_LEVEL: 'warn', PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1' });
  let destination: TestDestination;
  let readerId: string;
  let reactorId: string;
  let proxyId: string;
  let attackerKey: string;
  const formula = {
    code: 'module.exports = async (req) => ({ raw: req.configuration });',
    configuration: [{ name: 'URL', type: 'string' }],
  };

  beforeAll(async () => {
    destination = await startHttpDestination('127.0.0.1');
    const owner = env.tenant.client;
    readerId = (
      await owner.applications.create({ name: 'Card reader', type: 'private', permissions: ['token:read'] })
    ).id;
    reactorId = await createReactor(env.tenant, formula, {
      configuration: { URL: 'https://processor.example' },
      applicationId: readerId,
    });
    const proxy = await owner.request<Answer>('POST', '/proxies', {
      body: {
        name: 'Owner proxy',
        destination_url: `${destination.url}/owner`,
        require_auth: true,
        request_reactor_id: reactorId,
        application: { id: readerId },
      },
    });
    expect(proxy.status, JSON.stringify(proxy.body)).toBe(201);
    proxyId = proxy.body.id;
    attackerKey = (
      await owner.applications.create({
        name: 'Editor',
        type: 'private',
        permissions: ['reactor:read', 'reactor:update', 'proxy:read', 'proxy:update', 'token:use'],
      })
    ).key;
  });
  afterAll(async () => destination?.close());

  const send = (method: string, path: string, body: unknown) =>
    env.tenant.client.request<Answer>(method, path, {
      apiKey: attackerKey,
      body,
      ...(method === 'PATCH' ? { headers: { 'content-type': 'application/merge-patch+json' } } : {}),
    });
  const current = async (path: string) => (await env.tenant.client.request<Answer>('GET', path)).body;

  it('cannot unbind the reactor’s application (PATCH application: null, PUT without one), nor so rewrite its configuration (403, unchanged)', async () => {
    const before = await current(`/reactors/${reactorId}`);
    const writes: [string, unknown][] = [
      ['PATCH', { application: null }],
      ['PATCH', { application: null, configuration: { URL: 'https://attacker.example' } }],
      ['PUT', { name: 'reactor', configuration: { URL: 'https://attacker.example' } }],
    ];
    for (const [method, body] of writes) {
      const answer = await send(method, `/reactors/${reactorId}`, body);
      expect(answer.status, `${method} ${JSON.stringify(body)}`).toBe(403);
      expect(Object.keys(answer.body.errors ?? {})).toEqual(['path.id']);
    }
    expect(await current(`/reactors/${reactorId}`)).toEqual(before);
  });

  it('cannot unbind the proxy’s application nor its reactor, nor so repoint it (403, unchanged)', async () => {
    const before = await current(`/proxies/${proxyId}`);
    const bodies = [
      { application: null },
      { application: null, destination_url: `${destination.url}/attacker` },
      { request_reactor_id: null },
      { request_reactor_id: null, application: null, destination_url: `${destination.url}/attacker` },
    ];
    for (const body of bodies) {
      const answer = await send('PATCH', `/proxies/${proxyId}`, body);
      expect(answer.status, JSON.stringify(body)).toBe(403);
      // What it runs now (path.id), or what a PATCH keeps (its reactor, its application), which it
      // could not bind either.
      const named = Object.keys(answer.body.errors ?? {});
      expect(named.length).toBeGreaterThan(0);
      const refusable = ['path.id', 'body.request_reactor_id', 'body.application.id'];
      expect(
        named.filter((field) => !refusable.includes(field)),
        JSON.stringify(body),
      ).toEqual([]);
    }
    const replaced = await send('PUT', `/proxies/${proxyId}`, {
      name: 'Owner proxy',
      destination_url: `${destination.url}/attacker`,
      require_auth: true,
    });
    expect(replaced.status).toBe(403);
    expect(Object.keys(replaced.body.errors ?? {})).toEqual(['path.id']);
    expect(await current(`/proxies/${proxyId}`)).toEqual(before);
  });

  it('cannot delete them either, with reactor:delete and proxy:delete (403 on path.id, both still there)', async () => {
    const deleter = await env.tenant.client.applications.create({
      name: 'Deleter',
      type: 'private',
      permissions: ['reactor:read', 'reactor:delete', 'proxy:read', 'proxy:delete', 'token:use'],
    });
    for (const path of [`/proxies/${proxyId}`, `/reactors/${reactorId}`]) {
      const answer = await env.tenant.client.request<Answer>('DELETE', path, { apiKey: deleter.key });
      expect(answer.status, path).toBe(403);
      expect(Object.keys(answer.body.errors ?? {})).toEqual(['path.id']);
      expect((await env.tenant.client.request('GET', path)).status).toBe(200);
    }
  });
});
