import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapTenant } from '@tokenvault/tenancy';
import { eventually } from '@tokenvault/platform/testing';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';

/**
 * Holds the projector up: a transaction locks the audit log, which the projector writes in every
 * batch, until `release`. Whatever the projector is doing meanwhile, the write path must hold.
 */
async function holdProjectorUp(stack: TestStack): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: stack.database.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE audit_logs IN ACCESS EXCLUSIVE MODE');
  return {
    async release() {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

/**
 * The event of each log row the tenant is to have: each of its events, and its reads' tokens in
 * the batches of reads (whose metadata names no tenant).
 */
const eventsOf = async (stack: TestStack, tenantId: string) =>
  (
    await stack.service.runtime.ownerPool.query<{ event_id: string }>(
      `SELECT event_id::text FROM es_events WHERE metadata->>'tenant_id' = $1
       UNION ALL
       SELECT event_id::text
         FROM es_events, jsonb_array_elements(data->'reads') AS read, jsonb_array_elements(read->'tokens')
        WHERE event_type = 'TokensReadBatch' AND read->>'tenant_id' = $1`,
      [tenantId],
    )
  ).rows.map((row) => row.event_id);

describe('inline projections: writes answer from their own transaction, the projector held up', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  beforeAll(async () => {
    // This block is about the inline write path, in either run of the suite.
    stack = await startStack({ PROJECTIONS: 'inline', LOG_LEVEL: 'warn' });
    tenant = await stack.createTenant();
  });
  afterAll(async () => stack?.stop());

  it('answers writes and their reads at once and correctly; the audit log catches up afterwards, one row per event', async () => {
    const client = tenant.client;
    const held = await holdProjectorUp(stack);
    try {
      const parent = await client.request<{ id: string }>('POST', '/tokens', { body: { data: 'parent' } });
      expect(parent.status).toBe(201);
      expect(parent.headers.get('x-read-model-lagging')).toBeNull();
      expect((await client.request('GET', `/tokens/${parent.body.id}`)).body).toMatchObject({
        data: 'parent',
      });

      const child = await client.request<{ id: string }>('POST', '/tokens', { body: { data: 'child' } });
      expect(
        (await client.request('POST', `/tokens/${parent.body.id}/children/${child.body.id}`)).status,
      ).toBe(204);
      const children = await client.request<{ data: { id: string }[] }>(
        'GET',
        `/tokens/${parent.body.id}/children`,
      );
      expect(children.body.data.map((token) => token.id)).toEqual([child.body.id]);

      const application = await client.request<{ key: string }>('POST', '/applications', {
        body: { name: 'reader', type: 'private', permissions: ['token:read'] },
      });
      expect(application.status).toBe(201);
      const read = await client.withKey(application.body.key).request('GET', `/tokens/${parent.body.id}`);
      expect(read.status).toBe(200);

      const invitation = await client.request<{ id: string }>('POST', '/tenants/self/invitations', {
        body: { email: `held-${Date.now()}@example.com` },
      });
      expect(invitation.status).toBe(201);
      expect((await client.request('GET', `/tenants/self/invitations/${invitation.body.id}`)).status).toBe(
        200,
      );
    } finally {
      await held.release();
    }
    // Once the projector may write again, the log has exactly one row per event of the tenant.
    const events = await eventsOf(stack, tenant.tenantId);
    await eventually(async () => {
      const logs = await stack.service.runtime.ownerPool.query<{ event_id: string }>(
        'SELECT event_id::text FROM audit_logs WHERE tenant_id = $1',
        [tenant.tenantId],
      );
      expect(logs.rows.map((row) => row.event_id).sort()).toEqual([...events].sort());
    });
    const page = await client.request<{ pagination: { total_items: number } }>('GET', '/logs');
    expect(page.body.pagination.total_items).toBe((await eventsOf(stack, tenant.tenantId)).length);
  });
});

describe('uniqueness under concurrency, the projector held up', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  beforeAll(async () => {
    // Both projection modes (the suite's run chooses): claims do not depend on any projector.
    stack = await startStack({ LOG_LEVEL: 'warn', READ_YOUR_WRITES_TIMEOUT_MS: '1000' });
    tenant = await stack.createTenant();
    await tenant.client.request('PUT', '/tenants/self', {
      body: { name: 'Deduplicating', settings: { deduplicate_tokens: 'true' } },
    });
  });
  afterAll(async () => stack?.stop());

  const eventTypeCount = async (type: string, filter: string, value: string) =>
    (
      await stack.service.runtime.ownerPool.query<{ count: number }>(
        `SELECT count(*)::int AS count FROM es_events WHERE event_type = $1 AND ${filter} = $2`,
        [type, value],
      )
    ).rows[0]!.count;

  it('50 identical deduplicating creates make one token, and all of them answer it', async () => {
    const held = await holdProjectorUp(stack);
    let answers;
    try {
      answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          tenant.client.request<{ id: string }>('POST', '/tokens', {
            body: {
              type: 'card',
              data: { number: '4242424242424242', expiration_month: 1, expiration_year: 2031 },
            },
          }),
        ),
      );
    } finally {
      await held.release();
    }
    expect(answers.every((answer) => answer.status < 300)).toBe(true);
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1);
    expect(await eventTypeCount('TokenCreated', "metadata->>'tenant_id'", tenant.tenantId)).toBe(1);
  });

  it('50 invitations of one address make one invitation: one 201, the rest refused', async () => {
    const email = `once-${Date.now()}@example.com`;
    const held = await holdProjectorUp(stack);
    let statuses: number[];
    try {
      statuses = (
        await Promise.all(
          Array.from({ length: 50 }, () =>
            tenant.client.request('POST', '/tenants/self/invitations', {
              body: { email: email.toUpperCase() },
            }),
          ),
        )
      ).map((answer) => answer.status);
    } finally {
      await held.release();
    }
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    // 409 (the address has its invitation), or 429 for attempts past the e-mail cap of the address
    // while the others were still in flight.
    expect(
      statuses.filter((status) => status !== 201).every((status) => status === 409 || status === 429),
    ).toBe(true);
    // Once it exists, a duplicate is a 409 before any e-mail cap is counted.
    expect(
      (await tenant.client.request('POST', '/tenants/self/invitations', { body: { email } })).status,
    ).toBe(409);
    expect(await eventTypeCount('InvitationCreated', "lower(data->>'email')", email)).toBe(1);
  });

  it('20 bootstraps and acceptances of one address make one user', async () => {
    const email = `one-user-${Date.now()}@example.com`;
    const { runtime } = stack.service;
    // Invitations of the address in five tenants, to be accepted at the same moment as the bootstraps.
    const links: string[] = [];
    for (let index = 0; index < 5; index++) {
      const other = await stack.createTenant();
      const invitation = await other.client.request<{ id: string }>('POST', '/tenants/self/invitations', {
        body: { email },
      });
      links.push(
        runtime.invitationLinks.token({
          tenantId: other.tenantId,
          invitationId: invitation.body.id,
          linkVersion: 1,
        }),
      );
    }
    const held = await holdProjectorUp(stack);
    let owners: string[];
    let accepted: { status: number; body: { user: { id: string } } }[];
    try {
      [owners, accepted] = await Promise.all([
        Promise.all(
          Array.from({ length: 15 }, async (_, index) => {
            const result = await bootstrapTenant(runtime.store, runtime.vault, {
              tenantName: `Bootstrap ${index}`,
              ownerEmail: index % 2 ? email : email.toUpperCase(),
            });
            return result.owner_user_id;
          }),
        ),
        Promise.all(
          links.map((token) =>
            stack.client.request<{ user: { id: string } }>('POST', '/tenants/invitations/accept', {
              body: { token },
            }),
          ),
        ),
      ]);
    } finally {
      await held.release();
    }
    expect(accepted.map((answer) => answer.status)).toEqual(Array(5).fill(201));
    const userIds = new Set([...owners, ...accepted.map((answer) => answer.body.user.id)]);
    expect(userIds.size).toBe(1);
    expect(await eventTypeCount('UserRegistered', "lower(data->>'email')", email)).toBe(1);
  });
});

describe('read audit: one event per request, one log row per token', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  beforeAll(async () => {
    stack = await startStack({ LOG_LEVEL: 'warn' });
    tenant = await stack.createTenant();
  });
  afterAll(async () => stack?.stop());

  it('records a page of 20 children as one read naming them, and 20 read rows in the log', async () => {
    const parent = await tenant.client.request<{ id: string }>('POST', '/tokens', {
      body: { data: 'parent' },
    });
    const children: string[] = [];
    for (let index = 0; index < 20; index++) {
      const child = await tenant.client.request<{ id: string }>(
        'POST',
        `/tokens/${parent.body.id}/children`,
        {
          body: { data: index },
        },
      );
      children.push(child.body.id);
    }
    const page = await tenant.client.request<{ data: { id: string }[] }>(
      'GET',
      `/tokens/${parent.body.id}/children`,
    );
    expect(page.body.data).toHaveLength(20);
    // The tenant's reads, of the batches of reads (each names its reads' tenants).
    const reads = await stack.service.runtime.ownerPool.query<{ read: { tokens: { token_id: string }[] } }>(
      `SELECT read FROM es_events, jsonb_array_elements(data->'reads') AS read
        WHERE event_type = 'TokensReadBatch' AND read->>'tenant_id' = $1`,
      [tenant.tenantId],
    );
    expect(reads.rows).toHaveLength(1);
    expect(reads.rows[0]!.read.tokens.map((token) => token.token_id).sort()).toEqual([...children].sort());
    // GET /logs waits for the projector up to READ_YOUR_WRITES_TIMEOUT_MS, which a loaded machine
    // can outlast (the answer then says x-read-model-lagging).
    await eventually(async () => {
      const logs = await tenant.client.request<{ data: { entity_id: string; operation: string }[] }>(
        'GET',
        '/logs',
        { query: { size: 100 } },
      );
      const readRows = logs.body.data.filter((log) => log.operation === 'read').map((log) => log.entity_id);
      expect(readRows.sort()).toEqual([...children].sort());
    }, 30_000);
  });
});
