import type { DomainEvent } from '@tokenvault/cqrs';
import type { AccessTransform, ApplicationType, Permission, RateLimit } from '@tokenvault/contracts';

/** An access rule as events carry it: rules written before transforms have only container and permissions (they reveal). */
export interface ContainerRuleData {
  description?: string;
  priority?: number;
  container: string;
  transform?: AccessTransform;
  permissions: Permission[];
}

export type TenantSettings = { deduplicate_tokens: 'true' | 'false' };

export type TenancyEvent =
  | DomainEvent<
      'TenantCreated',
      {
        tenant_id: string;
        name: string;
        owner_id: string;
        settings: TenantSettings;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'TenantUpdated',
      { tenant_id: string; name: string; settings: TenantSettings; modified_by: string; modified_at: string }
    >
  | DomainEvent<'TenantDeleted', { tenant_id: string; deleted_by: string; deleted_at: string }>
  | DomainEvent<
      'UserRegistered',
      { user_id: string; email: string; first_name?: string; last_name?: string; created_at: string }
    >
  | DomainEvent<
      'MemberAdded',
      {
        member_id: string;
        tenant_id: string;
        user_id: string;
        role: 'OWNER' | 'ADMIN';
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'MemberRemoved',
      { member_id: string; tenant_id: string; user_id: string; removed_by: string; removed_at: string }
    >
  | DomainEvent<
      'InvitationCreated',
      {
        invitation_id: string;
        tenant_id: string;
        email: string;
        /** 1, then one more per resend: a link names its version, so a resend voids every earlier link. */
        link_version: number;
        /** SHA-256 of the link's token (derived from the ids and the version): never the token. */
        token_hash: string;
        expires_at: string;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'InvitationResent',
      {
        invitation_id: string;
        tenant_id: string;
        link_version: number;
        token_hash: string;
        expires_at: string;
        modified_by: string;
        modified_at: string;
      }
    >
  | DomainEvent<
      'InvitationDeleted',
      { invitation_id: string; tenant_id: string; deleted_by: string; deleted_at: string }
    >
  | DomainEvent<
      'InvitationAccepted',
      {
        invitation_id: string;
        tenant_id: string;
        link_version: number;
        member_id: string;
        user_id: string;
        accepted_at: string;
      }
    >
  | DomainEvent<
      'ApplicationCreated',
      {
        application_id: string;
        tenant_id: string;
        name: string;
        type: ApplicationType;
        permissions: Permission[];
        rules: ContainerRuleData[];
        /** SHA-256 of the key: the key itself is never stored. */
        key_hash: string;
        /** When the key expires: the creating key's own expiry, which it may not outlive; absent: never. */
        key_expires_at?: string;
        /** Absent in events written before rate limits existed, and when the default applies. */
        rate_limit?: RateLimit;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'ApplicationUpdated',
      {
        application_id: string;
        tenant_id: string;
        name: string;
        permissions: Permission[];
        rules: ContainerRuleData[];
        rate_limit?: RateLimit;
        modified_by: string;
        modified_at: string;
      }
    >
  | DomainEvent<
      'ApplicationDeleted',
      { application_id: string; tenant_id: string; deleted_by: string; deleted_at: string }
    >
  | DomainEvent<
      'ApplicationKeyCreated',
      {
        application_id: string;
        tenant_id: string;
        key_id: string;
        /** SHA-256 of the key: the key itself is never stored. */
        key_hash: string;
        /** From this instant on the key is refused; absent: it never expires. */
        expires_at?: string;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'ApplicationKeyDeleted',
      { application_id: string; tenant_id: string; key_id: string; deleted_by: string; deleted_at: string }
    >;

export const streams = {
  tenant: (tenantId: string) => `tenancy.tenant-${tenantId}`,
  user: (userId: string) => `tenancy.user-${userId}`,
  member: (tenantId: string, memberId: string) => `tenancy.member-${tenantId}-${memberId}`,
  application: (tenantId: string, applicationId: string) =>
    `tenancy.application-${tenantId}-${applicationId}`,
  invitation: (tenantId: string, invitationId: string) => `tenancy.invitation-${tenantId}-${invitationId}`,
};

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const tenancyEventTypes = Object.keys({
  TenantCreated: true,
  TenantUpdated: true,
  TenantDeleted: true,
  UserRegistered: true,
  MemberAdded: true,
  MemberRemoved: true,
  InvitationCreated: true,
  InvitationResent: true,
  InvitationDeleted: true,
  InvitationAccepted: true,
  ApplicationCreated: true,
  ApplicationUpdated: true,
  ApplicationDeleted: true,
  ApplicationKeyCreated: true,
  ApplicationKeyDeleted: true,
} satisfies Record<TenancyEvent['type'], true>) as TenancyEvent['type'][];
