export { tenancyContext, type TenancyContextDeps } from './context.ts';
export { tenancyMigrations } from './migrations.ts';
export { tenancyProjection } from './projections/tenancy.ts';
export { tenantKeyShredding } from './projections/key-shredding.ts';
export { createAuthenticator, principalOfApplication } from './queries/principal.ts';
export { bootstrapTenant, type BootstrapResult } from './commands/bootstrap.ts';
export { applicationRoutes } from './http/applications.ts';
export { ApplicationQueries } from './queries/applications.ts';
export { MemberQueries } from './queries/members.ts';
export { InvitationQueries } from './queries/invitations.ts';
export { tenantRoutes } from './http/tenants.ts';
export {
  tenancyInvalidationsOf,
  keysOfTenant,
  principalsOfTenant,
  tenantOfKeysInvalidation,
} from './projections/tenancy.ts';
export { applicationDecider } from './domain/application.ts';
export {
  actingGrantsNotHeld,
  actingGrantsNotHeldProblem,
  assertActingApplication,
  grantsNotHeld,
  type ActingApplication,
  type ApplicationGrants,
  type CallerGrants,
} from './domain/grant-rule.ts';
export { generateApiKey, hashApiKey } from './domain/api-key.ts';
export { streams as tenancyStreams, tenancyEventTypes, type TenancyEvent } from './domain/events.ts';
export { memberRoutes } from './http/members.ts';
export { invitationRoutes } from './http/invitations.ts';
export { InvitationMailLimits } from './commands/invitation-mail-limits.ts';
export { InvitationLinks } from './domain/invitation-link.ts';
export { systemClock, type Clock } from './domain/clock.ts';
export { loadInvitationMailFacts, type InvitationMailFacts } from './queries/invitation-mail.ts';
export { memberIdOfInvitation } from './domain/ids.ts';
export { tenancyClaims } from './domain/uniqueness.ts';
export { sessionRoutes } from './http/sessions.ts';
export { Sessions, type SessionSettings } from './sessions/sessions.ts';
export { SignInLinks } from './sessions/sign-in-links.ts';
export { createCallerAuthenticator, isSessionAuthorization, sessionCookieName } from './sessions/caller.ts';
