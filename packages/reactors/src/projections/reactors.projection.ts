import {
  notifyInvalidation,
  onTenantDeleted,
  type Projection,
  type TenantDeletedEvent,
} from '@tokenvault/cqrs';
import type { PoolClient } from '@tokenvault/platform';
import type { RecordedOf } from '@tokenvault/eventstore';
import type { ReactorsEvent } from '../domain/reactors.events.ts';

type Handled = ReactorsEvent | TenantDeletedEvent;

const ownedTables = ['reactors', 'reactor_formulas'] as const;

const tenantDeleted = onTenantDeleted(ownedTables);

export const reactorsProjection: Projection<Handled> = {
  name: 'reactors',
  tables: ownedTables,
  handles: [
    'ReactorFormulaCreated',
    'ReactorFormulaUpdated',
    'ReactorFormulaDeleted',
    'ReactorCreated',
    'ReactorUpdated',
    'ReactorDeleted',
    'TenantDeleted',
  ],
  async apply(events, tx) {
    for (const event of events) {
      await applyOne(event, tx);
      for (const key of reactorInvalidationsOf(event)) await notifyInvalidation(tx, key);
    }
  },
};

/** Reactors of this tenant held in memory (reactor-definitions.ts) are stale once this commits. */
export const reactorsOfTenant = (tenantId: string) => `reactors:${tenantId}`;

/**
 * The cache keys an event of this projection makes stale: announced at its commit (every
 * process), and told to the appending process's own caches at once. A reactor created changes no
 * cached one (reactors that are not there are not cached).
 */
export function reactorInvalidationsOf(event: { type: string; data: unknown }): string[] {
  const tenantId = (event.data as { tenant_id?: string }).tenant_id;
  if (!tenantId) return [];
  switch (event.type) {
    case 'ReactorFormulaUpdated':
    case 'ReactorFormulaDeleted':
    case 'ReactorUpdated':
    case 'ReactorDeleted':
    case 'TenantDeleted':
      return [reactorsOfTenant(tenantId)];
    default:
      return [];
  }
}

async function applyOne(event: RecordedOf<Handled>, tx: PoolClient): Promise<void> {
  switch (event.type) {
    case 'ReactorFormulaCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO reactor_formulas (tenant_id, id, name, description, type, code, configuration,
                                       request_parameters, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
        [
          d.tenant_id,
          d.formula_id,
          d.name,
          d.description ?? null,
          d.type,
          d.code,
          JSON.stringify(d.configuration),
          JSON.stringify(d.request_parameters),
          d.created_by,
          d.created_at,
        ],
      );
      return;
    }
    case 'ReactorFormulaUpdated': {
      const d = event.data;
      await tx.query(
        `UPDATE reactor_formulas SET name = $3, description = $4, type = $5, code = $6, configuration = $7,
                                     request_parameters = $8, modified_by = $9, modified_at = $10
           WHERE tenant_id = $1 AND id = $2`,
        [
          d.tenant_id,
          d.formula_id,
          d.name,
          d.description ?? null,
          d.type,
          d.code,
          JSON.stringify(d.configuration),
          JSON.stringify(d.request_parameters),
          d.modified_by,
          d.modified_at,
        ],
      );
      return;
    }
    case 'ReactorFormulaDeleted': {
      const d = event.data;
      await tx.query('DELETE FROM reactor_formulas WHERE tenant_id = $1 AND id = $2', [
        d.tenant_id,
        d.formula_id,
      ]);
      return;
    }
    case 'ReactorCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO reactors (tenant_id, id, name, formula_id, configuration_ciphertext, application_id,
                               created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
        [
          d.tenant_id,
          d.reactor_id,
          d.name,
          d.formula_id,
          d.configuration_ciphertext,
          d.application_id ?? null,
          d.created_by,
          d.created_at,
        ],
      );
      return;
    }
    case 'ReactorUpdated': {
      const d = event.data;
      await tx.query(
        `UPDATE reactors SET name = $3, configuration_ciphertext = $4, application_id = $5, modified_by = $6,
                             modified_at = $7
           WHERE tenant_id = $1 AND id = $2`,
        [
          d.tenant_id,
          d.reactor_id,
          d.name,
          d.configuration_ciphertext,
          d.application_id ?? null,
          d.modified_by,
          d.modified_at,
        ],
      );
      return;
    }
    case 'ReactorDeleted': {
      const d = event.data;
      await tx.query('DELETE FROM reactors WHERE tenant_id = $1 AND id = $2', [d.tenant_id, d.reactor_id]);
      return;
    }
    case 'TenantDeleted':
      await tenantDeleted(tx, [event.data]);
      return;
    default: {
      // Fails to compile when an event type of the context has no case here.
      const unhandled: never = event;
      throw new Error(`no projection for ${(unhandled as Handled).type}`);
    }
  }
}
