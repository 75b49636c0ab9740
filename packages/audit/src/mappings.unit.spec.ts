import { describe, expect, it } from 'vitest';
import { logEntriesOf, loggedEventTypes, logMappings, type LogMappings } from './mappings.ts';

const tenant = '6f1c1b52-3a0e-4d59-9a51-3f1f6b0e2a10';
const actor = '0b7e0b8e-5f2f-4a39-8f55-2f8d3b7c9e41';

describe('logEntriesOf', () => {
  it('maps an event by its own type, from the fields of its data', () => {
    expect(
      logEntriesOf({
        type: 'TokenAssociated',
        data: {
          tenant_id: tenant,
          parent_id: 'parent-1',
          child_id: 'child-1',
          type: 'card',
          containers: ['/general/'],
          associated_by: actor,
          associated_at: '2026-01-12T10:00:00.000Z',
        },
      }),
    ).toEqual([
      {
        entity_type: 'card',
        entity_id: 'child-1',
        operation: 'update',
        message: 'Token associated as a child of parent-1',
      },
    ]);
  });

  it('gives a read of many tokens one row per token', () => {
    expect(
      logEntriesOf({
        type: 'TokensRead',
        data: {
          tenant_id: tenant,
          tokens: [
            { token_id: 't-1', type: 'token' },
            { token_id: 'b-1', type: 'bank' },
            { token_id: 'c-1', type: 'card', transform: 'mask' },
            { token_id: 'c-2', type: 'card', transform: 'redact' },
          ],
          read_by: actor,
          read_at: '2026-01-12T10:00:00.000Z',
        },
      }),
    ).toEqual([
      { entity_type: 'token', entity_id: 't-1', operation: 'read', message: 'Token retrieved' },
      { entity_type: 'bank', entity_id: 'b-1', operation: 'read', message: 'Token retrieved' },
      { entity_type: 'card', entity_id: 'c-1', operation: 'read', message: 'Token retrieved (masked)' },
      { entity_type: 'card', entity_id: 'c-2', operation: 'read', message: 'Token retrieved (redacted)' },
    ]);
  });

  it('gives a batch of reads one row per token of each read, acted by the read’s own tenant and reader', () => {
    const otherTenant = '9a0c2d1e-7b64-4f0e-8c3a-1d2e3f4a5b6c';
    const read = (tenantId: string, readBy: string, tokenId: string) => ({
      tenant_id: tenantId,
      tokens: [{ token_id: tokenId, type: 'token' as const }],
      read_by: readBy,
      reader_type: 'application' as const,
      correlation_id: 'request-1',
      read_at: '2026-01-12T10:00:00.000Z',
    });
    expect(
      logEntriesOf({
        type: 'TokensReadBatch',
        data: { reads: [read(tenant, actor, 't-1'), read(otherTenant, 'other-app', 't-2')] },
      }),
    ).toEqual([
      {
        entity_type: 'token',
        entity_id: 't-1',
        operation: 'read',
        message: 'Token retrieved',
        actedBy: { tenant_id: tenant, actor_id: actor, actor_type: 'application' },
      },
      {
        entity_type: 'token',
        entity_id: 't-2',
        operation: 'read',
        message: 'Token retrieved',
        actedBy: { tenant_id: otherTenant, actor_id: 'other-app', actor_type: 'application' },
      },
    ]);
  });

  it('is what the mappings by type name give for a stored event', () => {
    const data = {
      tenant_id: tenant,
      proxy_id: 'p-1',
      deleted_by: actor,
      deleted_at: '2026-01-12T10:00:00.000Z',
    };
    expect(logMappings.ProxyDeleted!(data)).toEqual(logEntriesOf({ type: 'ProxyDeleted', data }));
  });

  it('lists every type that has a mapping', () => {
    expect([...loggedEventTypes].sort()).toEqual(Object.keys(logMappings).sort());
  });

  it('refuses, at compile time, a mapping that reads a field its event’s data does not have', () => {
    const renamed = {
      ProxyDeleted: (data) => [
        {
          entity_type: 'proxy',
          // @ts-expect-error: ProxyDeleted's data names its proxy `proxy_id`.
          entity_id: data.proxy,
          operation: 'delete',
          message: 'Proxy deleted',
        },
      ],
    } satisfies Partial<LogMappings>;
    expect(Object.keys(renamed)).toEqual(['ProxyDeleted']);
  });
});
