import type { ContextManifest } from '@tokenvault/cqrs';
import { afterAppendHook } from '@tokenvault/eventstore';
import type { Config } from '@tokenvault/platform';
import { tenancyEventTypes } from './domain/tenancy.events.ts';
import type { InvitationLinks } from './domain/invitation-link.ts';
import { tenancyClaims } from './domain/tenancy.uniqueness.ts';
import type { InvitationMailLimits } from './commands/invitation-mail-limits.ts';
import { applicationRoutes, type ApplicationRouteDeps } from './http/applications.routes.ts';
import { invitationRoutes, type InvitationRouteDeps } from './http/invitations.routes.ts';
import { memberRoutes, type MemberRouteDeps } from './http/members.routes.ts';
import { sessionRoutes, type SessionRouteDeps } from './http/sessions.routes.ts';
import { tenantRoutes, type TenantRouteDeps } from './http/tenants.routes.ts';
import { tenancyMigrations } from './migrations.ts';
import { tenantKeyShredding } from './projections/key-shredding.ts';
import { tenancyInvalidationsOf, tenancyProjection } from './projections/tenancy.projection.ts';

export type TenancyContextDeps = ApplicationRouteDeps &
  TenantRouteDeps &
  MemberRouteDeps &
  Omit<InvitationRouteDeps, 'links' | 'mailLimits'> &
  Omit<SessionRouteDeps, 'publicUrl' | 'absoluteTimeoutMs'> & {
    config: Pick<Config, 'PUBLIC_URL' | 'SESSION_ABSOLUTE_TIMEOUT_MS'>;
    invitationLinks: InvitationLinks;
    invitationMailLimits: InvitationMailLimits;
  };

/** What the tenancy context contributes to the service (the runtime lists it in contexts.ts). */
export const tenancyContext: ContextManifest<TenancyContextDeps> = {
  name: 'tenancy',
  migrations: tenancyMigrations,
  projections: { consistent: [tenancyProjection], trailing: [] },
  effects: {
    inline: [tenantKeyShredding],
    // With an external store the tenant's keys are shredded after the append.
    external: [afterAppendHook(tenantKeyShredding)],
  },
  claims: tenancyClaims,
  invalidations: tenancyInvalidationsOf,
  eventTypes: tenancyEventTypes,
  routes: (deps) => [
    ...sessionRoutes({
      ...deps,
      publicUrl: deps.config.PUBLIC_URL,
      absoluteTimeoutMs: deps.config.SESSION_ABSOLUTE_TIMEOUT_MS,
    }),
    ...applicationRoutes(deps),
    ...tenantRoutes(deps),
    ...memberRoutes(deps),
    ...invitationRoutes({ ...deps, links: deps.invitationLinks, mailLimits: deps.invitationMailLimits }),
  ],
};
