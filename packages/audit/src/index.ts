export { auditContext } from './context.ts';
export { auditMigrations } from './migrations.ts';
export { auditProjection } from './projections/audit.ts';
export { logRoutes } from './http/logs.ts';
export { logMappings, entityTypes, type LogEntry } from './mappings.ts';
export { findLogEvent } from './queries/log-event.ts';
