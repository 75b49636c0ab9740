import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import {
  invitationDecider,
  inviterWithdrawal,
  type InvitationCommand,
  type InvitationEvent,
} from './invitation.ts';
import { permissions as everyPermission } from '@tokenvault/contracts';
import { InvitationLinks, hashLinkToken } from './invitation-link.ts';
import { memberDecider, type MemberEvent } from './member.ts';
import { derivedUuid, memberIdOfInvitation, userIdOfEmail } from './ids.ts';
import { domainErrorWith } from '@tokenvault/platform/testing';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const invitationId = '9d2f0a1e-0000-4000-8000-000000000002';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const memberId = '9d2f0a1e-0000-4000-8000-000000000004';
const userId = '9d2f0a1e-0000-4000-8000-000000000005';
const now = '2026-03-01T00:00:00.000Z';
const later = '2026-03-02T00:00:00.000Z';
const in72h = '2026-03-04T00:00:00.000Z';
const linkHash = (version: number) => `hash-${version}`.padEnd(64, '0').replace(/[^0-9a-f]/g, 'a');

const created: InvitationEvent = {
  type: 'InvitationCreated',
  data: {
    invitation_id: invitationId,
    tenant_id: tenantId,
    email: 'a@example.com',
    link_version: 1,
    token_hash: linkHash(1),
    expires_at: in72h,
    created_by: actorId,
    created_at: now,
  },
};
const resent: InvitationEvent = {
  type: 'InvitationResent',
  data: {
    invitation_id: invitationId,
    tenant_id: tenantId,
    link_version: 2,
    token_hash: linkHash(2),
    expires_at: '2026-03-05T00:00:00.000Z',
    modified_by: actorId,
    modified_at: later,
  },
};
const deleted: InvitationEvent = {
  type: 'InvitationDeleted',
  data: { invitation_id: invitationId, tenant_id: tenantId, deleted_by: actorId, deleted_at: later },
};
const acceptedV1: InvitationEvent = {
  type: 'InvitationAccepted',
  data: {
    invitation_id: invitationId,
    tenant_id: tenantId,
    link_version: 1,
    member_id: memberId,
    user_id: userId,
    accepted_at: later,
  },
};
const create: InvitationCommand = {
  type: 'CreateInvitation',
  invitationId,
  tenantId,
  email: 'a@example.com',
  linkHash,
  actorId,
  now,
};
const resend: InvitationCommand = {
  type: 'ResendInvitation',
  invitationId,
  tenantId,
  linkHash,
  actorId,
  now: later,
};
const remove: InvitationCommand = { type: 'DeleteInvitation', invitationId, tenantId, actorId, now: later };
const accept = (linkVersion: number, at = later, tokenHash = linkHash(linkVersion)): InvitationCommand => ({
  type: 'AcceptInvitation',
  invitationId,
  tenantId,
  linkVersion,
  tokenHash,
  memberId,
  userId,
  now: at,
});
const spec = deciderSpec(invitationDecider);

describe('invitation decider', () => {
  it('creates PENDING with link version 1 and 72 hours', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(domainErrorWith('already-exists'));
  });

  it('resend: a new version and 72 hours from now, from PENDING or EXPIRED; never once gone', () => {
    spec.given([created]).when(resend).then([resent]);
    // Long expired: still resendable.
    spec
      .given([created])
      .when({ ...resend, now: '2026-04-01T00:00:00.000Z' })
      .then([
        {
          ...resent,
          data: {
            ...resent.data,
            expires_at: '2026-04-04T00:00:00.000Z',
            modified_at: '2026-04-01T00:00:00.000Z',
          },
        },
      ]);
    for (const history of [[], [created, deleted], [created, acceptedV1]]) {
      spec.given(history).when(resend).thenThrows(domainErrorWith('not-found'));
      spec.given(history).when(remove).thenThrows(domainErrorWith('not-found'));
    }
    spec.given([created, resent]).when(remove).then([deleted]);
  });

  it('accepts only the current, unexpired link whose hash matches (gone otherwise)', () => {
    spec.given([created]).when(accept(1)).then([acceptedV1]);
    spec.given([created, resent]).when(accept(1)).thenThrows(domainErrorWith('gone'));
    spec.given([created]).when(accept(1, in72h)).thenThrows(domainErrorWith('gone'));
    spec
      .given([created])
      .when(accept(1, later, linkHash(2)))
      .thenThrows(domainErrorWith('gone'));
    spec.given([created, deleted]).when(accept(1)).thenThrows(domainErrorWith('gone'));
    spec.given([]).when(accept(1)).thenThrows(domainErrorWith('gone'));
    // The same acceptance again records nothing (a concurrent twin or a retry)...
    spec.given([created, acceptedV1]).when(accept(1)).then([]);
    // ...but another member accepting a used link is refused.
    spec
      .given([created, acceptedV1])
      .when({ ...accept(1), memberId: userId } as InvitationCommand)
      .thenThrows(domainErrorWith('gone'));
  });
});

describe('member decider', () => {
  const member = deciderSpec(memberDecider);
  const added = (role: 'OWNER' | 'ADMIN'): MemberEvent => ({
    type: 'MemberAdded',
    data: {
      member_id: memberId,
      tenant_id: tenantId,
      user_id: userId,
      role,
      created_by: actorId,
      created_at: now,
    },
  });
  const removeMember = { type: 'RemoveMember', memberId, tenantId, actorId, now: later } as const;

  it('removes an ADMIN once; never the OWNER (unprocessable); unknown is not found', () => {
    member
      .given([added('ADMIN')])
      .when(removeMember)
      .then([
        {
          type: 'MemberRemoved',
          data: {
            member_id: memberId,
            tenant_id: tenantId,
            user_id: userId,
            removed_by: actorId,
            removed_at: later,
          },
        },
      ]);
    member
      .given([added('OWNER')])
      .when(removeMember)
      .thenThrows(domainErrorWith('unprocessable'));
    member.given([]).when(removeMember).thenThrows(domainErrorWith('not-found'));
    member
      .given([
        added('ADMIN'),
        {
          type: 'MemberRemoved',
          data: {
            member_id: memberId,
            tenant_id: tenantId,
            user_id: userId,
            removed_by: actorId,
            removed_at: later,
          },
        },
      ])
      .when(removeMember)
      .thenThrows(domainErrorWith('not-found'));
  });

  it('adds a member once', () => {
    member
      .given([added('ADMIN')])
      .when({ type: 'AddMember', memberId, tenantId, userId, role: 'ADMIN', actorId, now })
      .thenThrows(domainErrorWith('already-exists'));
  });
});

describe('invitation links', () => {
  const links = new InvitationLinks(Buffer.alloc(32, 7).toString('base64'));
  const identity = { tenantId, invitationId, linkVersion: 3 };

  it('derives the same token for the same ids and version, and parses it back', () => {
    const token = links.token(identity);
    expect(links.token(identity)).toBe(token);
    expect(links.parse(token)).toEqual(identity);
    expect(links.tokenHash(identity)).toBe(hashLinkToken(token));
    expect(links.token({ ...identity, linkVersion: 4 })).not.toBe(token);
  });

  it('rejects a tampered, truncated or foreign token', () => {
    const token = links.token(identity);
    const other = new InvitationLinks(Buffer.alloc(32, 8).toString('base64'));
    expect(other.parse(token)).toBeUndefined();
    expect(links.parse(token.replace('.3.', '.4.'))).toBeUndefined();
    expect(links.parse(token.slice(0, -1))).toBeUndefined();
    expect(links.parse(`${token}x`)).toBeUndefined();
    expect(links.parse('')).toBeUndefined();
  });

  it('derives stable, distinct ids', () => {
    expect(userIdOfEmail('A@Example.com')).toBe(userIdOfEmail('a@example.com'));
    expect(memberIdOfInvitation(tenantId, invitationId)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(derivedUuid('a', 'b')).not.toBe(derivedUuid('a', 'c'));
  });
});

describe('inviterWithdrawal: an invitation stands only while its inviter does', () => {
  const full = { type: 'management' as const, permissions: everyPermission, rules: [] };

  it('an application holding everything keeps it; one deleted or narrowed withdraws it', () => {
    expect(inviterWithdrawal({ kind: 'application', grants: full })).toBeUndefined();
    expect(inviterWithdrawal({ kind: 'application', grants: undefined })).toMatch(/was deleted/);
    expect(
      inviterWithdrawal({
        kind: 'application',
        grants: { ...full, permissions: everyPermission.filter((p) => p !== 'token:read') },
      }),
    ).toMatch(/no longer holds/);
  });

  it('a member keeps it while a member', () => {
    expect(inviterWithdrawal({ kind: 'user', member: true })).toBeUndefined();
    expect(inviterWithdrawal({ kind: 'user', member: false })).toMatch(/no longer a member/);
  });
});
