export { auditContext } from './context.ts';
export { auditMigrations } from './migrations.ts';
export { auditProjection } from './projections/audit.projection.ts';
export { logRoutes } from './http/logs.routes.ts';
export { logMappings, entityTypes, type LogEntry } from './mappings.ts';
export { findLogEvent } from './queries/log-event.queries.ts';
