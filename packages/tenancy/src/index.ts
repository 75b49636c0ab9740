export { tenancyMigrations } from './migrations.ts';
export { tenancyProjection } from './projections/tenancy.ts';
export { createAuthenticator } from './queries/principal.ts';
export { bootstrapTenant, type BootstrapResult } from './commands/bootstrap.ts';
export { applicationRoutes } from './http/applications.ts';
export { applicationDecider } from './domain/application.ts';
export { generateApiKey, hashApiKey } from './domain/api-key.ts';
export { streams as tenancyStreams, tenancyEventTypes, type TenancyEvent } from './domain/events.ts';
