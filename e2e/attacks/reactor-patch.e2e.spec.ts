// PATCH /reactors/{id} from the attacker's side. A reactor runs as its application, through
// `svc`: whoever may change it, or what it runs as, acts as that application. The attacker holds
// a key of the same tenant with reactor:read and reactor:update and token:use (to invoke), but not
// token:read. A PATCH that only checked the fields it names would let it take over the owner's
// card-reading reactor (changing its configuration, say, to send what it reads elsewhere), or make
// its own reactor run as the card reader.
import { beforeAll, describe, expect, it } from 'vitest';
import { createReactor } from '../support/reactors.ts';
import { useStack } from '../support/stack.ts';

interface Reactor {
  name: string;
  configuration: Record<string, unknown>;
  application?: { id: string };
  errors?: Record<string, string[]>;
}

describe('attack: a lesser key patches a reactor that runs as more than it holds', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  let readerId: string;
  let ownersReactor: string;
  let attackersReactor: string;
  let attackerKey: string;

  beforeAll(async () => {
    const owner = env.tenant.client;
    readerId = (
      await owner.applications.create({ name: 'Card reader', type: 'private', permissions: ['token:read'] })
    ).id;
    const formula = {
      code: 'module.exports = async (req) => ({ raw: req.configuration });',
      configuration: [{ name: 'URL', type: 'string' }],
    };
    ownersReactor = await createReactor(env.tenant, formula, {
      configuration: { URL: 'https://processor.example' },
      applicationId: readerId,
    });
    attackersReactor = await createReactor(env.tenant, formula, {
      configuration: { URL: 'https://mine.example' },
    });
    attackerKey = (
      await owner.applications.create({
        name: 'Reactor editor',
        type: 'private',
        permissions: ['reactor:read', 'reactor:update', 'token:use'],
      })
    ).key;
  });

  const patch = (id: string, body: unknown) =>
    env.tenant.client.request<Reactor>('PATCH', `/reactors/${id}`, {
      apiKey: attackerKey,
      body,
      headers: { 'content-type': 'application/merge-patch+json' },
    });
  const current = async (id: string) =>
    (await env.tenant.client.request<Reactor>('GET', `/reactors/${id}`)).body;

  it('cannot change the configuration of a reactor that runs as a card reader, nor even rename it (403 naming its application)', async () => {
    const before = await current(ownersReactor);
    for (const body of [{ configuration: { URL: 'https://attacker.example' } }, { name: 'Renamed' }]) {
      const answer = await patch(ownersReactor, body);
      expect(answer.status, JSON.stringify(body)).toBe(403);
      expect(Object.keys(answer.body.errors ?? {})).toEqual(['body.application.id']);
    }
    expect(await current(ownersReactor)).toEqual(before);
  });

  it('cannot make its own reactor run as the card reader (403), and the reactor stays as it was', async () => {
    const before = await current(attackersReactor);
    const answer = await patch(attackersReactor, { application: { id: readerId } });
    expect(answer.status).toBe(403);
    expect(Object.keys(answer.body.errors ?? {})).toEqual(['body.application.id']);
    expect(await current(attackersReactor)).toEqual(before);
    // What holds nothing more than the key it may change.
    const renamed = await patch(attackersReactor, { name: 'Mine, renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({
      name: 'Mine, renamed',
      configuration: { URL: 'https://mine.example' },
    });
  });
});
