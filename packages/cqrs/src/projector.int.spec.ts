import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { PoolClient } from '@tokenvault/platform';
import type { DomainEvent } from './decider.ts';
import type { TenantDeletedEvent } from './event-types.ts';
import { onTenantDeleted, type Projection } from './projector.ts';
import { projectionSpec, recordedEvent, useTestPool } from './testing.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const thirdTenant = randomUUID();

/** A read model of two tables, each row of one tenant. */
const migrations = [
  {
    id: 'test/001_notes',
    sql: `
      CREATE TABLE notes (tenant_id uuid NOT NULL, id text NOT NULL, PRIMARY KEY (tenant_id, id));
      CREATE TABLE note_tags (tenant_id uuid NOT NULL, note_id text NOT NULL, tag text NOT NULL);
    `,
  },
];

type NoteAdded = DomainEvent<'NoteAdded', { tenant_id: string; note_id: string; tag: string }>;

const tables = ['notes', 'note_tags'] as const;
const tenantDeleted = onTenantDeleted(tables);

const notesProjection: Projection<NoteAdded | TenantDeletedEvent> = {
  name: 'notes',
  tables,
  handles: ['NoteAdded', 'TenantDeleted'],
  async apply(events, tx) {
    for (const event of events) {
      switch (event.type) {
        case 'NoteAdded':
          await tx.query('INSERT INTO notes (tenant_id, id) VALUES ($1, $2)', [
            event.data.tenant_id,
            event.data.note_id,
          ]);
          await tx.query('INSERT INTO note_tags (tenant_id, note_id, tag) VALUES ($1, $2, $3)', [
            event.data.tenant_id,
            event.data.note_id,
            event.data.tag,
          ]);
          break;
        case 'TenantDeleted':
          await tenantDeleted(tx, [event.data]);
          break;
      }
    }
  },
};

const noteAdded = (tenantId: string, noteId: string) =>
  recordedEvent('NoteAdded', { tenant_id: tenantId, note_id: noteId, tag: 'x' });
const deleted = (tenantId: string) => recordedEvent('TenantDeleted', { tenant_id: tenantId });

/** `table: tenants with rows there`. */
const tenantsIn = async (tx: PoolClient) =>
  Object.fromEntries(
    await Promise.all(
      tables.map(async (table) => {
        const { rows } = await tx.query<{ tenant_id: string }>(
          `SELECT DISTINCT tenant_id FROM ${table} ORDER BY tenant_id`,
        );
        return [table, rows.map((row) => row.tenant_id)] as const;
      }),
    ),
  );

describe('onTenantDeleted', () => {
  const db = useTestPool(migrations);
  const spec = () => projectionSpec(notesProjection, db.pool);

  it('empties every table it is given of the deleted tenant’s rows, and of no other tenant’s', async () => {
    await spec()
      .given([noteAdded(tenant, 'n-1'), noteAdded(tenant, 'n-2'), noteAdded(otherTenant, 'n-1')])
      .when([deleted(tenant)])
      .then(async (tx) => {
        expect(await tenantsIn(tx)).toEqual({ notes: [otherTenant], note_tags: [otherTenant] });
      });
  });

  it('deletes every tenant of a run of deletions', async () => {
    await spec()
      .given([noteAdded(tenant, 'n-1'), noteAdded(otherTenant, 'n-1'), noteAdded(thirdTenant, 'n-1')])
      .when([])
      .then(async (tx) => {
        await tenantDeleted(tx, [{ tenant_id: tenant }, { tenant_id: thirdTenant }]);
        expect(await tenantsIn(tx)).toEqual({ notes: [otherTenant], note_tags: [otherTenant] });
      });
  });
});
