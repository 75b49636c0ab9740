import { alreadyExists, goneError, notFoundError } from '@tokenvault/platform';
import type { DataOf, Decider, EventOf } from '@tokenvault/cqrs';
import type { TenancyEvent } from './tenancy.events.ts';
import { sameDigest } from './invitation-link.ts';

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
