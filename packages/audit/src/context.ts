import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import type { Pool } from '@tokenvault/platform';
import { logRoutes } from './http/logs.routes.ts';
import { auditMigrations } from './migrations.ts';
import { auditProjection } from './projections/audit.projection.ts';

/**
 * What the audit context contributes to the service (the runtime lists it in contexts.ts): the
 * log of every event (a trailing read model) and its routes. It appends no events of its own.
 */
export const auditContext: ContextManifest<{ appPool: Pool; consistency: ReadModelConsistency }> = {
  name: 'audit',
  migrations: auditMigrations,
  projections: { consistent: [], trailing: [auditProjection] },
  effects: { inline: [], external: [] },
  eventTypes: [],
  routes: (deps) => logRoutes(deps),
};
