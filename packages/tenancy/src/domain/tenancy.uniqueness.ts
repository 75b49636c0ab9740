import type { ClaimChanges } from '@tokenvault/eventstore';
import type { TenancyEvent } from './tenancy.events.ts';

/** The uniqueness scopes of tenancy: the key each holds, and who holds it. */
export const tenancyClaimScopes = {
  /** One user per e-mail address (compared without case), whatever registers it. */
  userEmail: 'user-email',
  /** One pending invitation per address within a tenant. */
  invitationEmail: 'invitation-email',
  /** One membership per user within a tenant. */
  tenantMember: 'tenant-member',
} as const;

export const userEmailKey = (email: string) => email.toLowerCase();
export const invitationEmailKey = (tenantId: string, email: string) => `${tenantId}:${email.toLowerCase()}`;
export const tenantMemberKey = (tenantId: string, userId: string) => `${tenantId}:${userId}`;

/**
 * What each tenancy event claims and gives up. The claims are written in the append's own
 * transaction, so a second holder of a key is refused by that transaction (UniqueClaimTaken),
 * however far behind any projector is.
 */
export function tenancyClaims(event: { type: string; data: unknown }): ClaimChanges | undefined {
  const typed = event as TenancyEvent;
  switch (typed.type) {
    case 'UserRegistered':
      return {
        claim: [
          {
            scope: tenancyClaimScopes.userEmail,
            key: userEmailKey(typed.data.email),
            holder: typed.data.user_id,
          },
        ],
      };
    case 'InvitationCreated':
      return {
        claim: [
          {
            scope: tenancyClaimScopes.invitationEmail,
            key: invitationEmailKey(typed.data.tenant_id, typed.data.email),
            holder: typed.data.invitation_id,
            tenant_id: typed.data.tenant_id,
          },
        ],
      };
    case 'InvitationDeleted':
    case 'InvitationAccepted':
      return {
        releaseHeldBy: [{ scope: tenancyClaimScopes.invitationEmail, holder: typed.data.invitation_id }],
      };
    case 'MemberAdded':
      return {
        claim: [
          {
            scope: tenancyClaimScopes.tenantMember,
            key: tenantMemberKey(typed.data.tenant_id, typed.data.user_id),
            holder: typed.data.member_id,
            tenant_id: typed.data.tenant_id,
          },
        ],
      };
    case 'MemberRemoved':
      return { releaseHeldBy: [{ scope: tenancyClaimScopes.tenantMember, holder: typed.data.member_id }] };
    case 'TenantDeleted':
      return { releaseTenant: typed.data.tenant_id };
    case 'TenantCreated':
    case 'TenantUpdated':
    case 'ApplicationCreated':
    case 'ApplicationUpdated':
    case 'ApplicationKeyCreated':
    case 'ApplicationKeyDeleted':
    case 'ApplicationDeleted':
    case 'InvitationResent':
      return undefined;
    default:
      // Another context's event (every event is asked).
      return undefined;
  }
}
