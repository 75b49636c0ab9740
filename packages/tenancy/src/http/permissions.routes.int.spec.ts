import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testPrincipal } from '@tokenvault/cqrs/testing';
import { permissions } from '@tokenvault/contracts';
import { routeApp } from '@tokenvault/platform/testing';
import { permissionRoutes } from './permissions.routes.ts';

interface Described {
  type: string;
  description: string;
  application_types: string[];
}

describe('GET /permissions, in process', () => {
  const tenant = randomUUID();
  // Any caller, whatever it holds: a public key holds token:create alone.
  const api = routeApp(permissionRoutes(), {
    publicKey: testPrincipal(tenant, randomUUID(), ['token:create']),
    member: testPrincipal(tenant, randomUUID(), [], { actorType: 'user' }),
  });

  it('lists every permission with its description and the application types that may hold it', async () => {
    const listed = (await api.get('/permissions').set('svc-api-key', 'publicKey').expect(200))
      .body as Described[];
    expect(listed.map((entry) => entry.type)).toEqual([...permissions]);
    for (const entry of listed) expect(entry.description.length, entry.type).toBeGreaterThan(10);
    const byType = Object.fromEntries(listed.map((entry) => [entry.type, entry.application_types]));
    expect(byType['token:create']).toEqual(['private', 'public', 'management']);
    expect(byType['token:read']).toEqual(['private', 'management']);
    expect(byType['application:create']).toEqual(['private', 'management']);
    await api.get('/permissions').set('svc-api-key', 'member').expect(200);
  });

  it('filters by application_type; an unknown type is a 400 naming it; without a key, a 401', async () => {
    const publicOnly = (
      await api
        .get('/permissions')
        .query({ application_type: 'public' })
        .set('svc-api-key', 'publicKey')
        .expect(200)
    ).body as Described[];
    expect(publicOnly.map((entry) => entry.type)).toEqual(['token:create', 'token-intent:create']);
    const management = (
      await api
        .get('/permissions')
        .query({ application_type: 'management' })
        .set('svc-api-key', 'publicKey')
        .expect(200)
    ).body as Described[];
    expect(management).toHaveLength(permissions.length);
    const refused = await api
      .get('/permissions')
      .query({ application_type: 'expiring' })
      .set('svc-api-key', 'publicKey')
      .expect(400);
    expect(Object.keys((refused.body as { errors: object }).errors)).toEqual(['query.application_type']);
    await api.get('/permissions').expect(401);
  });
});
