import { describe, expect, it } from 'vitest';
import { tenancyClaims } from './tenancy.uniqueness.ts';

const tenant_id = '9d2f0a1e-0000-4000-8000-000000000001';

describe('tenancy uniqueness claims', () => {
  it('one user per address, whatever its case', () => {
    expect(
      tenancyClaims({ type: 'UserRegistered', data: { user_id: 'u', email: 'Ann@Example.com' } }),
    ).toEqual({
      claim: [{ scope: 'user-email', key: 'ann@example.com', holder: 'u' }],
    });
  });

  it('one invitation per address in a tenant, until deleted or accepted', () => {
    expect(
      tenancyClaims({ type: 'InvitationCreated', data: { tenant_id, invitation_id: 'i', email: 'A@b.c' } }),
    ).toEqual({ claim: [{ scope: 'invitation-email', key: `${tenant_id}:a@b.c`, holder: 'i', tenant_id }] });
    for (const type of ['InvitationDeleted', 'InvitationAccepted']) {
      expect(tenancyClaims({ type, data: { tenant_id, invitation_id: 'i' } })).toEqual({
        releaseHeldBy: [{ scope: 'invitation-email', holder: 'i' }],
      });
    }
    expect(
      tenancyClaims({ type: 'InvitationResent', data: { tenant_id, invitation_id: 'i' } }),
    ).toBeUndefined();
  });

  it('one membership per user in a tenant; a deleted tenant frees all of its claims', () => {
    expect(tenancyClaims({ type: 'MemberAdded', data: { tenant_id, member_id: 'm', user_id: 'u' } })).toEqual(
      {
        claim: [{ scope: 'tenant-member', key: `${tenant_id}:u`, holder: 'm', tenant_id }],
      },
    );
    expect(
      tenancyClaims({ type: 'MemberRemoved', data: { tenant_id, member_id: 'm', user_id: 'u' } }),
    ).toEqual({
      releaseHeldBy: [{ scope: 'tenant-member', holder: 'm' }],
    });
    expect(tenancyClaims({ type: 'TenantDeleted', data: { tenant_id } })).toEqual({
      releaseTenant: tenant_id,
    });
  });
});
