import { alreadyExists, goneError, notFoundError } from '@tokenvault/platform';
import type { DataOf, Decider, EventOf } from '@tokenvault/cqrs';
import type { TenancyEvent } from './tenancy.events.ts';
import { sameDigest } from './invitation-link.ts';
import { invitationNotHeld, type ApplicationGrants } from './grant-rule.ts';

export type InvitationEvent = EventOf<
  TenancyEvent,
  'InvitationCreated' | 'InvitationResent' | 'InvitationDeleted' | 'InvitationAccepted'
>;

/** An invitation lives 72 hours from its creation, and again from each resend. */
export const invitationLifetimeMs = 72 * 60 * 60 * 1000;

/** An invitation as decided: what its creation recorded (its id as `id`), then its resends. */
export type InvitationView = Omit<DataOf<TenancyEvent, 'InvitationCreated'>, 'invitation_id'> & {
  id: string;
  modified_by?: string;
  modified_at?: string;
};

export type InvitationState =
  | { status: 'absent' }
  | { status: 'pending'; invitation: InvitationView }
  | { status: 'deleted' }
  | { status: 'accepted'; memberId: string; linkVersion: number; email: string };

export type InvitationCommand =
  | {
      type: 'CreateInvitation';
      invitationId: string;
      tenantId: string;
      email: string;
      /** The token hash of a link version (pure: derived from the ids and the version). */
      linkHash(version: number): string;
      actorId: string;
      now: string;
    }
  | {
      type: 'ResendInvitation';
      invitationId: string;
      tenantId: string;
      linkHash(version: number): string;
      actorId: string;
      now: string;
    }
  | { type: 'DeleteInvitation'; invitationId: string; tenantId: string; actorId: string; now: string }
  | {
      type: 'AcceptInvitation';
      invitationId: string;
      tenantId: string;
      linkVersion: number;
      /** SHA-256 of the presented token. */
      tokenHash: string;
      memberId: string;
      userId: string;
      now: string;
    };

/** The link existed but can no longer be used. */
export const linkGone = (detail: string) => goneError(detail);

const missing = () => notFoundError('No invitation with this id.');
const plus72h = (now: string) => new Date(Date.parse(now) + invitationLifetimeMs).toISOString();

/**
 * Whether a presented link may still be used: the invitation is pending, the link is of its
 * current version and has not expired, and its hash is the one recorded (constant-time).
 * Throws a `gone` DomainError naming why not.
 */
export function checkLink(
  state: InvitationState,
  link: { linkVersion: number; tokenHash: string },
  now: string,
): InvitationView {
  switch (state.status) {
    case 'absent':
    case 'deleted':
      throw linkGone('This invitation no longer exists.');
    case 'accepted':
      throw linkGone('This invitation has already been accepted.');
    case 'pending': {
      const invitation = state.invitation;
      if (
        link.linkVersion !== invitation.link_version ||
        !sameDigest(link.tokenHash, invitation.token_hash)
      ) {
        throw linkGone('This link was replaced by a newer one: use the link of the latest e-mail.');
      }
      if (Date.parse(invitation.expires_at) <= Date.parse(now)) {
        throw linkGone('This invitation has expired: ask for it to be sent again.');
      }
      return invitation;
    }
  }
}

export const invitationDecider: Decider<InvitationState, InvitationCommand, InvitationEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'InvitationCreated': {
        const d = event.data;
        return {
          status: 'pending',
          invitation: {
            id: d.invitation_id,
            tenant_id: d.tenant_id,
            email: d.email,
            link_version: d.link_version,
            token_hash: d.token_hash,
            expires_at: d.expires_at,
            created_by: d.created_by,
            created_at: d.created_at,
          },
        };
      }
      case 'InvitationResent': {
        if (state.status !== 'pending') return state;
        const d = event.data;
        return {
          status: 'pending',
          invitation: {
            ...state.invitation,
            link_version: d.link_version,
            token_hash: d.token_hash,
            expires_at: d.expires_at,
            modified_by: d.modified_by,
            modified_at: d.modified_at,
          },
        };
      }
      case 'InvitationDeleted':
        return { status: 'deleted' };
      case 'InvitationAccepted':
        return {
          status: 'accepted',
          memberId: event.data.member_id,
          linkVersion: event.data.link_version,
          email: state.status === 'pending' ? state.invitation.email : '',
        };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateInvitation':
        if (state.status !== 'absent') throw alreadyExists('An invitation with this id exists.');
        return [
          {
            type: 'InvitationCreated',
            data: {
              invitation_id: command.invitationId,
              tenant_id: command.tenantId,
              email: command.email,
              link_version: 1,
              token_hash: command.linkHash(1),
              expires_at: plus72h(command.now),
              created_by: command.actorId,
              created_at: command.now,
            },
          },
        ];
      case 'ResendInvitation': {
        // PENDING or EXPIRED (an expired invitation is a pending one whose time has passed).
        if (state.status !== 'pending') throw missing();
        const version = state.invitation.link_version + 1;
        return [
          {
            type: 'InvitationResent',
            data: {
              invitation_id: command.invitationId,
              tenant_id: command.tenantId,
              link_version: version,
              token_hash: command.linkHash(version),
              expires_at: plus72h(command.now),
              modified_by: command.actorId,
              modified_at: command.now,
            },
          },
        ];
      }
      case 'DeleteInvitation':
        if (state.status !== 'pending') throw missing();
        return [
          {
            type: 'InvitationDeleted',
            data: {
              invitation_id: command.invitationId,
              tenant_id: command.tenantId,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
      case 'AcceptInvitation':
        // The same acceptance again (a retry, or a concurrent twin that lost the race after the
        // member was added): nothing more to record.
        if (state.status === 'accepted' && state.memberId === command.memberId) {
          if (state.linkVersion === command.linkVersion) return [];
        }
        checkLink(state, command, command.now);
        return [
          {
            type: 'InvitationAccepted',
            data: {
              invitation_id: command.invitationId,
              tenant_id: command.tenantId,
              link_version: command.linkVersion,
              member_id: command.memberId,
              user_id: command.userId,
              accepted_at: command.now,
            },
          },
        ];
    }
  },
};

/**
 * Who sent an invitation's current link (its resender, else its creator), as it is now: an
 * application (its stream: active with its grants, or deleted), or a user (whether still a member).
 */
export type InviterNow =
  { kind: 'application'; grants: ApplicationGrants | undefined } | { kind: 'user'; member: boolean };

/**
 * Why an invitation no longer stands (undefined: it does). An invitation grants the ADMIN role
 * for its inviter, so it stands only while the inviter does: an application not deleted and
 * still holding everything an ADMIN member holds (invitationNotHeld), a member still a member.
 */
export function inviterWithdrawal(inviter: InviterNow): string | undefined {
  if (inviter.kind === 'user') {
    return inviter.member
      ? undefined
      : 'The member who sent this invitation is no longer a member: ask for a new one.';
  }
  if (!inviter.grants) return 'The application that sent this invitation was deleted: ask for a new one.';
  return invitationNotHeld(inviter.grants).length > 0
    ? 'The application that sent this invitation no longer holds every permission an ADMIN member holds: ask for a new one.'
    : undefined;
}
