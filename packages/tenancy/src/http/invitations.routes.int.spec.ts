import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandHandler } from '@tokenvault/cqrs';
import { storedEvents, testPrincipal, useReadSide } from '@tokenvault/cqrs/testing';
import { createRedis, systemClock } from '@tokenvault/platform';
import { routeApp } from '@tokenvault/platform/testing';
import { InvitationMailLimits } from '../commands/invitation-mail-limits.ts';
import { InvitationCommands } from '../commands/invitations.commands.ts';
import { InvitationLinks } from '../domain/invitation-link.ts';
import { memberDecider } from '../domain/member.ts';
import { streams } from '../domain/tenancy.events.ts';
import { tenancyClaims } from '../domain/tenancy.uniqueness.ts';
import { tenancyMigrations } from '../migrations.ts';
import { tenancyProjection } from '../projections/tenancy.projection.ts';
import { InvitationQueries } from '../queries/invitations.queries.ts';
import { MemberQueries } from '../queries/members.queries.ts';
import { invitationRoutes } from './invitations.routes.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const member = randomUUID();
const writes = [
  'tenant:invitation:create',
  'tenant:invitation:read',
  'tenant:invitation:update',
  'tenant:invitation:delete',
];
/** SVC-API-KEY → the caller it names. */
const callers = {
  member: testPrincipal(tenant, member, writes, { actorType: 'user' }),
  reader: testPrincipal(tenant, randomUUID(), ['tenant:invitation:read'], { actorType: 'user' }),
  /** May invite, but not send an invitation again (resend needs tenant:invitation:update too). */
  inviter: testPrincipal(tenant, randomUUID(), ['tenant:invitation:create'], { actorType: 'user' }),
  otherTenant: testPrincipal(otherTenant, randomUUID(), writes, { actorType: 'user' }),
};

const links = new InvitationLinks(randomBytes(32).toString('base64'));
/** A new address for each invitation: one address has one invitation per tenant. */
const address = () => `invitee-${randomUUID().slice(0, 8)}@example.com`;

describe('invitation routes, in process (commands on an in-memory store, queries on PostgreSQL)', () => {
  const side = useReadSide(tenancyMigrations, [tenancyProjection], { uniqueness: tenancyClaims });
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  let api: ReturnType<typeof routeApp>;

  beforeAll(async () => {
    const { store, ownerPool, appPool, consistency } = side;
    const commands = new InvitationCommands({
      store,
      ownerPool,
      links,
      clock: systemClock,
      mailLimits: new InvitationMailLimits(redis, {
        perInvitation: 5,
        perInvitationWindowMs: 60_000,
        perAddress: 5,
        perAddressWindowMs: 60_000,
      }),
      memberQueries: new MemberQueries(appPool),
    });
    const queries = new InvitationQueries(appPool);
    // The inviting member is a member: an invitation stands only while its inviter does.
    await commandHandler(store, memberDecider, (command) =>
      streams.member(command.tenantId, command.memberId),
    )(
      {
        type: 'AddMember',
        memberId: randomUUID(),
        tenantId: tenant,
        userId: member,
        role: 'ADMIN',
        actorId: member,
        now: new Date().toISOString(),
      },
      { tenant_id: tenant, actor_id: member, actor_type: 'user' },
      { newStream: true },
    );
    api = routeApp(invitationRoutes({ commands, queries, consistency, clock: systemClock }), callers);
    // The tenant the invitations are to (accepting one needs it).
    const created = await store.given(streams.tenant(tenant), [
      {
        type: 'TenantCreated',
        data: {
          tenant_id: tenant,
          name: 'Acme',
          owner_id: member,
          settings: {},
          created_by: member,
          created_at: new Date().toISOString(),
        },
        metadata: { tenant_id: tenant, actor_id: member, actor_type: 'user', correlation_id: 'given' },
      },
    ]);
    await consistency.waitFor(created.position);
  });
  afterAll(() => redis.disconnect());

  const invite = async (email = address()) => {
    const response = await api
      .post('/tenants/self/invitations')
      .set('svc-api-key', 'member')
      .send({ email })
      .expect(201);
    return response.body as { id: string; email: string };
  };

  it('POST /tenants/self/invitations appends InvitationCreated and answers the PENDING invitation, readable at once', async () => {
    const email = address();
    const response = await api
      .post('/tenants/self/invitations')
      .set('svc-api-key', 'member')
      .send({ email })
      .expect(201);
    const created = response.body as Record<string, unknown> & { id: string };
    expect(created).toMatchObject({ tenant_id: tenant, email, status: 'PENDING', created_by: member });
    const events = await storedEvents(side.store, streams.invitation(tenant, created.id));
    expect(events.map((event) => event.type)).toEqual(['InvitationCreated']);
    expect(events[0]!.metadata).toMatchObject({ tenant_id: tenant, actor_id: member });
    const read = await api
      .get(`/tenants/self/invitations/${created.id}`)
      .set('svc-api-key', 'reader')
      .expect(200);
    expect(read.body).toEqual(created);
  });

  it('a body the schema refuses is a 400 problem naming each field, and nothing is appended', async () => {
    const head = await side.store.headPosition();
    const response = await api
      .post('/tenants/self/invitations')
      .set('svc-api-key', 'member')
      .send({ email: 'Someone <someone@example.com>', role: 'OWNER' })
      .expect(400)
      .expect('content-type', /^application\/problem\+json/);
    expect(Object.keys((response.body as { errors: object }).errors).sort()).toEqual([
      'body.email',
      'body.role',
    ]);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('a second invitation of one address is a 409, and nothing is appended', async () => {
    const { email } = await invite();
    const head = await side.store.headPosition();
    await api.post('/tenants/self/invitations').set('svc-api-key', 'member').send({ email }).expect(409);
    expect(await side.store.headPosition()).toEqual(head);
  });

  it('without an API key every route that takes one is a 401 problem', async () => {
    const { id } = await invite();
    for (const call of [
      api.post('/tenants/self/invitations').send({ email: address() }),
      api.get('/tenants/self/invitations'),
      api.get(`/tenants/self/invitations/${id}`),
      api.post(`/tenants/self/invitations/${id}/resend`),
      api.delete(`/tenants/self/invitations/${id}`),
    ]) {
      const response = await call.expect(401).expect('content-type', /^application\/problem\+json/);
      expect(response.body).toMatchObject({ status: 401 });
    }
  });

  it('a key without the permission is a 403 naming it (resend also needs tenant:invitation:update)', async () => {
    const { id } = await invite();
    const refused = await api
      .post('/tenants/self/invitations')
      .set('svc-api-key', 'reader')
      .send({ email: address() })
      .expect(403);
    expect(refused.body).toMatchObject({ detail: expect.stringContaining('tenant:invitation:create') });
    const resend = await api
      .post(`/tenants/self/invitations/${id}/resend`)
      .set('svc-api-key', 'inviter')
      .expect(403);
    expect(resend.body).toMatchObject({ detail: expect.stringContaining('tenant:invitation:update') });
    await api.delete(`/tenants/self/invitations/${id}`).set('svc-api-key', 'reader').expect(403);
    expect(await storedEvents(side.store, streams.invitation(tenant, id))).toHaveLength(1);
  });

  it('another tenant’s invitation is a 404 on every route that names it, and stays as it was', async () => {
    const { id } = await invite();
    const asOther = 'otherTenant';
    await api.get(`/tenants/self/invitations/${id}`).set('svc-api-key', asOther).expect(404);
    await api.post(`/tenants/self/invitations/${id}/resend`).set('svc-api-key', asOther).expect(404);
    await api.delete(`/tenants/self/invitations/${id}`).set('svc-api-key', asOther).expect(404);
    const listed = await api.get('/tenants/self/invitations').set('svc-api-key', asOther).expect(200);
    expect(listed.body).toMatchObject({ data: [], pagination: { total_items: 0 } });
    expect(await storedEvents(side.store, streams.invitation(tenant, id))).toHaveLength(1);
  });

  it('the link’s token accepts the invitation (no API key): the ADMIN member is answered and the link is spent', async () => {
    const { id, email } = await invite();
    const token = links.token({ tenantId: tenant, invitationId: id, linkVersion: 1 });
    const accepted = await api
      .post('/tenants/invitations/accept')
      .send({ token, first_name: 'Ada' })
      .expect(201);
    expect(accepted.body).toMatchObject({
      tenant_id: tenant,
      role: 'ADMIN',
      user: { email, first_name: 'Ada' },
    });
    expect(
      (await storedEvents(side.store, streams.invitation(tenant, id))).map((event) => event.type),
    ).toEqual(['InvitationCreated', 'InvitationAccepted']);
    await api.post('/tenants/invitations/accept').send({ token }).expect(410);
    const forged = await api
      .post('/tenants/invitations/accept')
      .send({ token: `${token.slice(0, -2)}xx` })
      .expect(400);
    expect(forged.body).toMatchObject({ errors: { 'body.token': [expect.any(String)] } });
  });

  it('resend raises the link’s version and DELETE removes the invitation: earlier links stop working', async () => {
    const { id } = await invite();
    const first = links.token({ tenantId: tenant, invitationId: id, linkVersion: 1 });
    const resent = await api
      .post(`/tenants/self/invitations/${id}/resend`)
      .set('svc-api-key', 'member')
      .expect(200);
    expect(resent.body).toMatchObject({ id, status: 'PENDING' });
    await api.post('/tenants/invitations/accept').send({ token: first }).expect(410);
    await api.delete(`/tenants/self/invitations/${id}`).set('svc-api-key', 'member').expect(204);
    await api.get(`/tenants/self/invitations/${id}`).set('svc-api-key', 'member').expect(404);
    expect(
      (await storedEvents(side.store, streams.invitation(tenant, id))).map((event) => event.type),
    ).toEqual(['InvitationCreated', 'InvitationResent', 'InvitationDeleted']);
  });
});
