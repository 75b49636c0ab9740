export { tenancyContext, type TenancyContextDeps } from './context.ts';
export { tenancyMigrations } from './migrations.ts';
export { tenancyProjection } from './projections/tenancy.projection.ts';
export { tenantKeyShredding } from './projections/key-shredding.ts';
export { createAuthenticator, principalOfApplication } from './queries/principal.queries.ts';
export { bootstrapTenant, type BootstrapResult } from './commands/bootstrap.ts';
export { applicationRoutes } from './http/applications.routes.ts';
export { ApplicationQueries } from './queries/applications.queries.ts';
export { MemberQueries } from './queries/members.queries.ts';
export { InvitationQueries } from './queries/invitations.queries.ts';
export { tenantRoutes } from './http/tenants.routes.ts';
export { tenantsNamedAndOwnedBy } from './queries/tenants.queries.ts';
export {
  tenancyInvalidationsOf,
  keysOfTenant,
  principalsOfTenant,
  tenantOfKeysInvalidation,
} from './projections/tenancy.projection.ts';
export { applicationDecider } from './domain/application.ts';
export {
  actingGrantsNotHeld,
  actingGrantsNotHeldError,
  assertActingApplication,
  assertMayChangeBound,
  grantsNotHeld,
  type ActingApplication,
  type ApplicationGrants,
  type CallerGrants,
} from './domain/grant-rule.ts';
export { generateApiKey, hashApiKey } from './domain/api-key.ts';
export { streams as tenancyStreams, tenancyEventTypes, type TenancyEvent } from './domain/tenancy.events.ts';
export { memberRoutes } from './http/members.routes.ts';
export { invitationRoutes } from './http/invitations.routes.ts';
export { InvitationMailLimits } from './commands/invitation-mail-limits.ts';
export { InvitationLinks } from './domain/invitation-link.ts';
export { loadInvitationMailFacts, type InvitationMailFacts } from './queries/invitation-mail.queries.ts';
export { memberIdOfInvitation } from './domain/ids.ts';
export { tenancyClaims } from './domain/tenancy.uniqueness.ts';
export { sessionRoutes } from './http/sessions.routes.ts';
export { Sessions, type SessionSettings } from './sessions/sessions.service.ts';
export { SignInLinks } from './sessions/sign-in-links.ts';
export { createCallerAuthenticator, isSessionAuthorization, sessionCookieName } from './sessions/caller.ts';
