import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import { afterAppendHook, type EventStore } from '@tokenvault/eventstore';
import type { Clock, Config, Pool } from '@tokenvault/platform';
import { ApplicationCommands } from './commands/applications.commands.ts';
import { InvitationCommands, type InvitationCommandDeps } from './commands/invitations.commands.ts';
import type { InvitationMailLimits } from './commands/invitation-mail-limits.ts';
import { MemberCommands } from './commands/members.commands.ts';
import { TenantCommands } from './commands/tenants.commands.ts';
import { tenancyEventTypes } from './domain/tenancy.events.ts';
import type { InvitationLinks } from './domain/invitation-link.ts';
import { tenancyClaims } from './domain/tenancy.uniqueness.ts';
import { applicationRoutes } from './http/applications.routes.ts';
import { invitationRoutes } from './http/invitations.routes.ts';
import { memberRoutes } from './http/members.routes.ts';
import { permissionRoutes } from './http/permissions.routes.ts';
import { sessionRoutes, type SessionRouteDeps } from './http/sessions.routes.ts';
import { tenantRoutes } from './http/tenants.routes.ts';
import { tenancyMigrations } from './migrations.ts';
import { tenantKeyShredding } from './projections/key-shredding.ts';
import { tenancyInvalidationsOf, tenancyProjection } from './projections/tenancy.projection.ts';
import type { ApplicationQueries } from './queries/applications.queries.ts';
import type { InvitationQueries } from './queries/invitations.queries.ts';
import type { MemberQueries } from './queries/members.queries.ts';

/** What the tenancy context's routes are built from: its commands' collaborators, its queries. */
export interface TenancyContextDeps
  extends
    Omit<SessionRouteDeps, 'publicUrl' | 'absoluteTimeoutMs'>,
    Omit<InvitationCommandDeps, 'links' | 'mailLimits'> {
  store: EventStore;
  clock: Clock;
  /** The app role's pool: the tenant's own row (GET /tenants/self). */
  appPool: Pool;
  consistency: ReadModelConsistency;
  config: Pick<Config, 'PUBLIC_URL' | 'SESSION_ABSOLUTE_TIMEOUT_MS'>;
  /** RATE_LIMIT_PER_MINUTE: what an application without its own rate_limit may make. */
  rateLimitPerMinute: number;
  /** The process's application queries (reactors and proxies read applications with them too). */
  applications: ApplicationQueries;
  memberQueries: MemberQueries;
  invitationQueries: InvitationQueries;
  invitationLinks: InvitationLinks;
  invitationMailLimits: InvitationMailLimits;
}

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
  // The context's composition step: its commands, built once from the process's collaborators.
  routes: (deps) => {
    const { store, clock, consistency } = deps;
    const invitations = new InvitationCommands({
      ...deps,
      links: deps.invitationLinks,
      mailLimits: deps.invitationMailLimits,
    });
    return [
      ...sessionRoutes({
        ...deps,
        publicUrl: deps.config.PUBLIC_URL,
        absoluteTimeoutMs: deps.config.SESSION_ABSOLUTE_TIMEOUT_MS,
      }),
      ...applicationRoutes({
        commands: new ApplicationCommands(store, deps.rateLimitPerMinute, clock),
        queries: deps.applications,
        consistency,
      }),
      ...permissionRoutes(),
      ...tenantRoutes({ commands: new TenantCommands(store, clock), appPool: deps.appPool, consistency }),
      ...memberRoutes({
        commands: new MemberCommands(store, clock),
        queries: deps.memberQueries,
        consistency,
      }),
      ...invitationRoutes({ commands: invitations, queries: deps.invitationQueries, consistency, clock }),
    ];
  },
};
