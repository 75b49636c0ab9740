import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  UnpublishableEventError,
  cloudEventSchema,
  toPublicMessage,
  toPublicMessages,
} from './cloud-event.ts';
import { renderEventsDoc } from './events-doc.ts';
import { publicEvents } from './public-events.ts';

const tenantId = '7d6f0f4e-4a53-4f3e-9b7a-0d8a2f0e1c11';
const recorded = (type: string, data: unknown) => ({
  event_id: '5f1c7a52-7c39-4a8c-bd0d-2f3b2b8d7a10',
  type,
  data,
  metadata: { tenant_id: tenantId, actor_id: 'app-1', actor_type: 'application' as const },
  created_at: new Date('2030-01-02T03:04:05.678Z'),
});

describe('public events (the allow-list of what goes to Kafka)', () => {
  it('publishes a token as a CloudEvent without its data, ciphertext, fingerprint or metadata', () => {
    const message = toPublicMessage(
      recorded('TokenCreated', {
        token_id: 'tok-1',
        tenant_id: tenantId,
        type: 'card',
        data_ciphertext: 'SECRET-CIPHERTEXT',
        data: { number: '4242424242424242' },
        containers: ['/pci/high/'],
        metadata: { customer: 'SECRET-METADATA' },
        fingerprint: 'SECRET-FINGERPRINT',
        created_by: 'app-1',
        created_at: '2030-01-02T03:04:05.678Z',
      }),
    );
    expect(message.topic).toBe('tokens');
    expect(message.key).toBe(`${tenantId}/tok-1`);
    expect(cloudEventSchema.parse(message.value)).toEqual(message.value);
    expect(message.value).toMatchObject({
      specversion: '1.0',
      id: '5f1c7a52-7c39-4a8c-bd0d-2f3b2b8d7a10',
      source: '/tokenvault/tokens',
      type: 'tokenvault.tokens.TokenCreated',
      subject: `${tenantId}/tok-1`,
      time: '2030-01-02T03:04:05.678Z',
      datacontenttype: 'application/json',
      tenantid: tenantId,
      entitytype: 'token',
    });
    expect(Object.keys(message.value.data).sort()).toEqual(
      ['containers', 'created_at', 'created_by', 'tenant_id', 'token_id', 'type'].sort(),
    );
    expect(JSON.stringify(message)).not.toMatch(/SECRET|4242/);
  });

  it('publishes a CVC’s removal and a card intent without what was derived from the data, nor the CVC’s time', () => {
    const removed = toPublicMessage(
      recorded('TokenCvcRemoved', {
        token_id: 'tok-1',
        tenant_id: tenantId,
        type: 'card',
        data_ciphertext: 'SECRET-CIPHERTEXT',
        removed_at: '2030-01-02T03:04:05.678Z',
        derived: { fingerprint: 'SECRET-FINGERPRINT', search_index_values: ['SECRET-BLIND'] },
      }),
    );
    expect(Object.keys(removed.value.data).sort()).toEqual(['removed_at', 'tenant_id', 'token_id', 'type']);
    const intent = toPublicMessage(
      recorded('TokenIntentCreated', {
        intent_id: 'intent-1',
        tenant_id: tenantId,
        type: 'card',
        data_ciphertext: 'SECRET-CIPHERTEXT',
        fingerprint: 'SECRET-FINGERPRINT',
        expires_at: '2030-01-02T04:04:05.678Z',
        cvc_expires_at: '2030-01-02T04:04:05.678Z',
        created_by: 'app-1',
        created_at: '2030-01-02T03:04:05.678Z',
      }),
    );
    expect(intent.value.data).not.toHaveProperty('cvc_expires_at');
    expect(JSON.stringify([removed, intent])).not.toContain('SECRET');
  });

  it('drops key hashes and e-mail addresses', () => {
    const application = toPublicMessage(
      recorded('ApplicationCreated', {
        application_id: 'a1',
        tenant_id: tenantId,
        name: 'Shop',
        type: 'private',
        permissions: ['token:read'],
        rules: [],
        key_hash: 'SECRET-HASH',
        created_by: 'u1',
        created_at: '2030-01-01T00:00:00Z',
      }),
    );
    const user = toPublicMessage(
      recorded('UserRegistered', {
        user_id: 'u1',
        email: 'SECRET@example.com',
        first_name: 'SECRET',
        created_at: '2030-01-01T00:00:00Z',
      }),
    );
    expect(application.key).toBe(`${tenantId}/a1`);
    expect(user).toMatchObject({ topic: 'tenancy', key: 'u1', value: { data: { user_id: 'u1' } } });
    expect(JSON.stringify([application, user])).not.toMatch(/SECRET/);
  });

  it('publishes a new application key by its id and expiry, never its hash', () => {
    const created = toPublicMessage(
      recorded('ApplicationKeyCreated', {
        application_id: 'a1',
        tenant_id: tenantId,
        key_id: 'k1',
        key_hash: 'SECRET-HASH',
        expires_at: '2030-02-01T00:00:00.000Z',
        created_by: 'u1',
        created_at: '2030-01-01T00:00:00Z',
      }),
    );
    const deleted = toPublicMessage(
      recorded('ApplicationKeyDeleted', {
        application_id: 'a1',
        tenant_id: tenantId,
        key_id: 'k1',
        deleted_by: 'u1',
        deleted_at: '2030-01-02T00:00:00Z',
      }),
    );
    expect(created).toMatchObject({ topic: 'tenancy', key: `${tenantId}/a1` });
    expect(Object.keys(created.value.data).sort()).toEqual(
      ['application_id', 'created_at', 'created_by', 'expires_at', 'key_id', 'tenant_id'].sort(),
    );
    expect(deleted.value.data).toEqual({
      application_id: 'a1',
      tenant_id: tenantId,
      key_id: 'k1',
      deleted_by: 'u1',
      deleted_at: '2030-01-02T00:00:00Z',
    });
    expect(JSON.stringify([created, deleted])).not.toMatch(/SECRET/);
  });

  it('never publishes formula code nor reactor configuration values', () => {
    const formula = toPublicMessage(
      recorded('ReactorFormulaCreated', {
        formula_id: 'f1',
        tenant_id: tenantId,
        name: 'Charge',
        type: 'private',
        code: 'SECRET-CODE',
        configuration: [{ name: 'API_KEY', type: 'string', description: 'SECRET-DESCRIPTION' }],
        request_parameters: [{ name: 'card.number', type: 'string', optional: false }],
        created_by: 'a1',
        created_at: '2030-01-01T00:00:00Z',
      }),
    );
    // The events hold the configuration sealed (configuration_ciphertext): not even that leaves.
    const created = toPublicMessage(
      recorded('ReactorCreated', {
        reactor_id: 'r1',
        tenant_id: tenantId,
        name: 'Stripe',
        formula_id: 'f1',
        configuration_ciphertext: 'SECRET-CIPHERTEXT',
        created_by: 'a1',
        created_at: '2030-01-01T00:00:00Z',
      }),
    );
    const reactor = toPublicMessage(
      recorded('ReactorUpdated', {
        reactor_id: 'r1',
        tenant_id: tenantId,
        name: 'Stripe',
        configuration_ciphertext: 'SECRET-CIPHERTEXT',
        // A configuration in the clear (as events held it before it was sealed) is dropped too.
        configuration: { API_KEY: 'SECRET-KEY' },
        modified_by: 'a1',
        modified_at: '2030-01-01T00:00:00Z',
      }),
    );
    expect(formula).toMatchObject({ topic: 'reactors', key: `${tenantId}/f1` });
    for (const message of [created, reactor]) {
      expect(message).toMatchObject({
        topic: 'reactors',
        key: `${tenantId}/r1`,
        value: { entitytype: 'reactor' },
      });
      expect(Object.keys(message.value.data)).not.toContain('configuration_ciphertext');
      expect(Object.keys(message.value.data)).not.toContain('configuration');
    }
    expect(JSON.stringify([formula, created, reactor])).not.toMatch(/SECRET/);
  });

  it('publishes a batch of reads as a TokensRead per read, each of its own tenant and with its fields only', () => {
    const otherTenant = '1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9';
    const read = (tenant: string, tokenId: string) => ({
      tenant_id: tenant,
      // The token's creation time is for the usage report, not part of the published read.
      tokens: [
        { token_id: tokenId, type: 'card', transform: 'mask', created_at: '2029-12-31T00:00:00.000Z' },
      ],
      read_by: 'app-1',
      reader_type: 'application',
      correlation_id: 'SECRET-CORRELATION',
      read_at: '2030-01-02T03:04:05.000Z',
    });
    const batch = {
      ...recorded('TokensReadBatch', { reads: [read(tenantId, 'tok-1'), read(otherTenant, 'tok-2')] }),
      metadata: { tenant_id: '00000000-0000-0000-0000-000000000000', actor_type: 'system' as const },
    };
    expect(() => toPublicMessage(batch)).toThrow(UnpublishableEventError);
    const messages = toPublicMessages(batch);
    expect(
      messages.map((message) => [message.topic, message.key, message.value.id, message.value.tenantid]),
    ).toEqual([
      ['audit', tenantId, `${batch.event_id}/0`, tenantId],
      ['audit', otherTenant, `${batch.event_id}/1`, otherTenant],
    ]);
    expect(messages[0]!.value).toMatchObject({
      type: 'tokenvault.audit.TokensRead',
      time: '2030-01-02T03:04:05.678Z',
      data: {
        tenant_id: tenantId,
        tokens: [{ token_id: 'tok-1', type: 'card', transform: 'mask' }],
        read_by: 'app-1',
        read_at: '2030-01-02T03:04:05.000Z',
      },
    });
    expect(JSON.stringify(messages[0])).not.toMatch(/tok-2|SECRET|reader_type|created_at|2029-12-31/);
    expect(JSON.stringify(messages[1])).not.toContain('tok-1');
    // Any other event is its one message.
    const single = recorded('TokenDeleted', {
      token_id: 't',
      tenant_id: tenantId,
      deleted_by: 'app-1',
      deleted_at: '2030-01-02T03:04:05.000Z',
    });
    expect(toPublicMessages(single).map((message) => message.value.id)).toEqual([single.event_id]);
  });

  it('refuses an event type without an entry, and data that does not fit its schema', () => {
    expect(() => toPublicMessage(recorded('SomethingNew', { secret: 'x' }))).toThrow(UnpublishableEventError);
    expect(() => toPublicMessage(recorded('TokenDeleted', { token_id: 1 }))).toThrow();
  });

  it('every field of every entry is described', () => {
    const rows = renderEventsDoc()
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(Object.keys(publicEvents).length);
    expect(rows.filter((row) => row.endsWith('|  |'))).toEqual([]);
  });
});

describe('docs/events.md', () => {
  it('lists every topic and event type as generated from the schemas', async () => {
    const file = new URL('../../../docs/events.md', import.meta.url);
    const start = '<!-- generated from packages/contracts/src/public-events.ts: start -->';
    const end = '<!-- generated: end -->';
    const text = readFileSync(file, 'utf8');
    const before = text.slice(0, text.indexOf(start) + start.length);
    const after = text.slice(text.indexOf(end));
    // Formatted as `prettier --write` leaves the file (it aligns the tables).
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(fileURLToPath(file))) ?? {};
    const expected = await prettier.format(`${before}\n\n${renderEventsDoc()}\n${after}`, {
      ...options,
      filepath: fileURLToPath(file),
    });
    if (process.env.UPDATE_EVENTS_DOC === '1') writeFileSync(file, expected);
    expect(text.includes(start) && text.includes(end), 'markers').toBe(true);
    expect(
      text,
      'docs/events.md is out of date: run UPDATE_EVENTS_DOC=1 npx vitest run packages/contracts',
    ).toBe(expected);
  });
});
