import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logMappings } from '@tokenvault/audit';
import { eventually } from '@tokenvault/platform/testing';
import { startHttpDestination } from './support/destinations.ts';
import { TestClock } from './support/clock.ts';
import { linkTokenOf, startSmtpServer, type TestSmtpServer } from './support/smtp.ts';
import { runAdminCli } from './support/service-process.ts';
import { startStack, type TestStack, type TestTenant } from './support/stack.ts';

interface Log {
  entity_type: string;
  entity_id: string;
  operation: string;
  message: string;
  actor_id?: string;
}

/**
 * One of every write the service offers, through the API, and then exactly one log row per event
 * it appended (checked against the event store itself, event by event).
 */
describe('audit log: one row per event, for every write the service offers', () => {
  let smtp: TestSmtpServer;
  let stack: TestStack;
  let tenant: TestTenant;
  // Moved past a token intent's 24 hours once every other write is done (TokenIntentExpired).
  const clock = new TestClock();

  beforeAll(async () => {
    smtp = await startSmtpServer();
    // 127.0.0.1 is allow-listed: a proxy's destination is checked when it is saved (never called here).
    // A card's CVC goes a second after it was given (TokenCvcRemoved, a write of the worker); a
    // webhook's URL is checked when it is saved, like a proxy's destination.
    stack = await startStack(
      {
        SMTP_URL: smtp.url,
        PROXY_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
        CARD_CVC_TTL_SECONDS: '1',
        WEBHOOK_ALLOWED_PRIVATE_ADDRESSES: '127.0.0.1',
        TOKEN_INTENT_SWEEP_INTERVAL_MS: '200',
      },
      { clock },
    );
    tenant = await stack.createTenant();
  });
  afterAll(async () => {
    await stack?.stop();
    await smtp?.stop();
  });

  it('logs every event type with its entity, operation and actor', async () => {
    const client = tenant.client;
    const ok = async (promise: Promise<{ status: number; body: unknown }>) => {
      const response = await promise;
      expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
      return response.body as { id: string };
    };
    const parent = await ok(client.request('POST', '/tokens', { body: { data: 'parent' } }));
    const other = await ok(
      client.request('POST', '/tokens', {
        body: { type: 'bank', data: { routing_number: '011000015', account_number: '1234' } },
      }),
    );
    await ok(client.request('GET', `/tokens/${other.id}`));
    const card = await ok(
      client.request('POST', '/tokens', {
        body: {
          type: 'card',
          data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
        },
      }),
    );
    await ok(
      client.request('PATCH', `/tokens/${other.id}`, {
        body: { metadata: { note: 'patched' }, data: { account_number: '5678' } },
        headers: { 'content-type': 'application/merge-patch+json' },
      }),
    );
    await ok(client.request('GET', '/tokens', { query: { type: 'bank' } }));
    // Bulk: two tokens in one append (a row each), then one read naming both (a row each).
    const bulk = (await ok(
      client.request('POST', '/tokenize', {
        body: { a: { type: 'token', data: 'bulk a' }, b: { type: 'token', data: 'bulk b' } },
      }),
    )) as unknown as { a: { id: string }; b: { id: string } };
    await ok(client.request('POST', '/detokenize', { body: [`{{ ${bulk.a.id} }}`, `{{ ${bulk.b.id} }}`] }));
    await ok(client.request('POST', `/tokens/${parent.id}/children/${other.id}`));
    await ok(client.request('DELETE', `/tokens/${parent.id}/children/${other.id}`));
    const child = await ok(
      client.request('POST', `/tokens/${parent.id}/children`, { body: { data: 'child' } }),
    );
    await ok(client.request('GET', `/tokens/${parent.id}/children`));
    await ok(client.request('DELETE', `/tokens/${child.id}`));
    const application = await ok(
      client.request('POST', '/applications', { body: { name: 'a', type: 'private', permissions: [] } }),
    );
    await ok(client.request('PUT', `/applications/${application.id}`, { body: { name: 'b' } }));
    const applicationKey = await ok(client.request('POST', `/applications/${application.id}/keys`));
    await ok(client.request('DELETE', `/applications/${application.id}/keys/${applicationKey.id}`));
    await ok(client.request('DELETE', `/applications/${application.id}`));
    await ok(client.request('PUT', '/tenants/self', { body: { name: 'renamed' } }));
    const email = `audited-${Date.now()}@example.com`;
    const invitation = await ok(client.request('POST', '/tenants/self/invitations', { body: { email } }));
    await smtp.waitFor(email);
    await ok(client.request('POST', `/tenants/self/invitations/${invitation.id}/resend`));
    const mail = await smtp.waitFor(email, (message) => linkTokenOf(message).split('.')[2] === '2');
    const member = await ok(
      stack.client.request('POST', '/tenants/invitations/accept', { body: { token: linkTokenOf(mail) } }),
    );
    await ok(client.request('DELETE', `/tenants/self/members/${member.id}`));
    const dropped = await ok(
      client.request('POST', '/tenants/self/invitations', {
        body: { email: `dropped-${Date.now()}@example.com` },
      }),
    );
    await ok(client.request('DELETE', `/tenants/self/invitations/${dropped.id}`));
    const formula = await ok(
      client.request('POST', '/reactor-formulas', {
        body: {
          name: 'f',
          code: 'module.exports = async () => ({});',
          configuration: [{ name: 'KEY', type: 'string' }],
        },
      }),
    );
    await ok(
      client.request('PUT', `/reactor-formulas/${formula.id}`, {
        body: {
          name: 'g',
          code: 'module.exports = async () => ({});',
          configuration: [{ name: 'KEY', type: 'string' }],
        },
      }),
    );
    const reactor = await ok(
      client.request('POST', '/reactors', {
        body: { name: 'r', configuration: { KEY: 'k' }, formula: { id: formula.id } },
      }),
    );
    await ok(
      client.request('PUT', `/reactors/${reactor.id}`, { body: { name: 's', configuration: { KEY: 'l' } } }),
    );
    await ok(
      client.request('PATCH', `/reactors/${reactor.id}`, {
        body: { name: 't' },
        headers: { 'content-type': 'application/merge-patch+json' },
      }),
    );
    await ok(client.request('DELETE', `/reactors/${reactor.id}`));
    await ok(client.request('DELETE', `/reactor-formulas/${formula.id}`));
    const proxy = await ok(
      client.request('POST', '/proxies', { body: { name: 'p', destination_url: 'http://127.0.0.1:9/' } }),
    );
    await ok(
      client.request('PUT', `/proxies/${proxy.id}`, {
        body: { name: 'q', destination_url: 'http://127.0.0.1:9/v2', configuration: { KEY: 'k' } },
      }),
    );
    await ok(client.request('PATCH', `/proxies/${proxy.id}`, { body: { require_auth: false } }));
    await ok(client.request('DELETE', `/proxies/${proxy.id}`));
    const webhook = await ok(
      client.request('POST', '/webhooks', {
        body: { name: 'w', url: 'http://127.0.0.1:9/hooks', events: ['token:created'] },
      }),
    );
    await ok(
      client.request('PUT', `/webhooks/${webhook.id}`, {
        body: { name: 'x', url: 'http://127.0.0.1:9/hooks', events: ['token:deleted'], status: 'disabled' },
      }),
    );
    await ok(client.request('DELETE', `/webhooks/${webhook.id}`));
    // A receiver that answers 410: the worker disables its webhook (WebhookDisabled, by the system).
    const gone = await startHttpDestination();
    gone.answer((_request, res) => {
      res.writeHead(410);
      res.end();
    });
    try {
      const goneWebhook = await ok(
        client.request('POST', '/webhooks', {
          body: { name: 'gone', url: `${gone.url}/hooks`, events: ['token:created'] },
        }),
      );
      await ok(client.request('POST', '/tokens', { body: { type: 'token', data: 'for the webhook' } }));
      await eventually(async () => {
        const read = await client.request<{ status: string }>('GET', `/webhooks/${goneWebhook.id}`);
        expect(read.body.status).toBe('disabled');
      }, 30_000);
    } finally {
      await gone.close();
    }

    // The worker's removal of the card's CVC.
    await eventually(async () => {
      const read = await client.request<{ data: Record<string, unknown> }>('GET', `/tokens/${card.id}`);
      expect(read.body.data).not.toHaveProperty('cvc');
    });

    // Token intents: one made a token, one deleted, one left to expire (the sweep, on the clock).
    const intentOf = async () =>
      ok(client.request('POST', '/token-intents', { body: { type: 'token', data: 'collected' } }));
    const converted = await intentOf();
    await ok(client.request('POST', '/tokens', { body: { token_intent_id: converted.id } }));
    const deleted = await intentOf();
    await ok(client.request('DELETE', `/token-intents/${deleted.id}`));
    await intentOf();
    clock.advance(24 * 3600_000 + 60_000);
    await eventually(async () => {
      const expired = await stack.service.runtime.ownerPool.query(
        `SELECT 1 FROM es_events WHERE event_type = 'TokenIntentExpired' AND metadata->>'tenant_id' = $1`,
        [tenant.tenantId],
      );
      expect(expired.rowCount).toBe(1);
    }, 30_000);

    // An operator's key commands (npm run keys) are events and log rows too.
    const { KAFKA_BROKERS: _kafka, MASTER_KEY: _key, MASTER_KEYS: _keys, ...inherited } = process.env;
    const operator = {
      ...inherited,
      DATABASE_URL: stack.config.DATABASE_URL,
      REDIS_URL: stack.config.REDIS_URL,
      QUEUE_PREFIX: stack.config.QUEUE_PREFIX,
      PROJECTIONS: stack.config.PROJECTIONS,
    };
    await runAdminCli('keys.ts', ['rotate-tenant', tenant.tenantId], {
      ...operator,
      MASTER_KEY: stack.config.MASTER_KEY,
    });
    await runAdminCli('keys.ts', ['reencrypt-token', tenant.tenantId, other.id], {
      ...operator,
      MASTER_KEY: stack.config.MASTER_KEY,
    });
    // Last: from here the tenant's key is wrapped by a master key this service does not hold.
    await runAdminCli('keys.ts', ['rewrap'], {
      ...operator,
      MASTER_KEYS: `next:${randomBytes(32).toString('base64')},default:${stack.config.MASTER_KEY}`,
    });

    // The tenant's events, and the batches of reads that name one of its reads (a batch's
    // metadata names no tenant: each of its rows is its own read's tenant's).
    const events = await stack.service.runtime.ownerPool.query<{
      event_type: string;
      data: Record<string, unknown>;
      tenant_id: string;
    }>(
      `SELECT event_type, data, metadata->>'tenant_id' AS tenant_id FROM es_events
        WHERE metadata->>'tenant_id' = $1
           OR (event_type = 'TokensReadBatch' AND data->'reads' @> jsonb_build_array(jsonb_build_object('tenant_id', $1::text)))
        ORDER BY global_position`,
      [tenant.tenantId],
    );
    const expected = events.rows.flatMap((event) =>
      logMappings[event.event_type]!(event.data)
        .filter((entry) => (entry.actedBy?.tenant_id ?? event.tenant_id) === tenant.tenantId)
        .map((entry) => [entry.entity_type, entry.entity_id, entry.operation, entry.message]),
    );
    // Every event type of the service but the tenant's own deletion (checked in tenant.e2e),
    // TokenRead and TokensRead (only in logs written before TokensReadBatch) appears.
    const absent = ['TenantDeleted', 'TokenRead', 'TokensRead'];
    expect(new Set(events.rows.map((event) => event.event_type))).toEqual(
      new Set(Object.keys(logMappings).filter((type) => !absent.includes(type))),
    );
    const logs = await eventually(async () => {
      const page = await client.request<{ data: Log[] }>('GET', '/logs', { query: { size: 100 } });
      expect(page.body.data).toHaveLength(expected.length);
      return page.body.data;
    });
    expect(logs.map((log) => [log.entity_type, log.entity_id, log.operation, log.message]).sort()).toEqual(
      expected.sort(),
    );
    const byApplication = logs.filter((log) => log.actor_id === tenant.applicationId);
    expect(byApplication.length).toBeGreaterThan(expected.length / 2);
  });
});
