import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  type CommandHandler,
  type CommandOutcome,
} from '@tokenvault/cqrs';
import {
  comparePositions,
  UniqueClaimTaken,
  type EventMetadata,
  type EventStore,
  type Position,
} from '@tokenvault/eventstore';
import { badRequest, conflict, isDomainError, type Pool, type Principal } from '@tokenvault/platform';
import type {
  AcceptInvitationBody,
  InvitationLinkResponse,
  InvitationResponse,
  MemberResponse,
} from '@tokenvault/contracts';
import type { Clock } from '@tokenvault/platform';
import { streams } from '../domain/tenancy.events.ts';
import { memberIdOfInvitation, userIdOfEmail } from '../domain/ids.ts';
import {
  checkLink,
  invitationDecider,
  inviterWithdrawal,
  type InvitationView,
  linkGone,
  type InvitationCommand,
  type InvitationEvent,
  type InvitationState,
} from '../domain/invitation.ts';
import { hashLinkToken, type InvitationLinks } from '../domain/invitation-link.ts';
import { memberDecider, type MemberCommand, type MemberEvent, type MemberState } from '../domain/member.ts';
import {
  invitationEmailKey,
  tenancyClaimScopes,
  tenantMemberKey,
  userEmailKey,
} from '../domain/tenancy.uniqueness.ts';
import { userDecider, type UserCommand, type UserEvent, type UserState } from '../domain/user.ts';
import { invitationStatusAt } from '../queries/invitations.queries.ts';
import type { MemberQueries } from '../queries/members.queries.ts';
import type { InvitationMailLimits } from './invitation-mail-limits.ts';
import { invitationNotHeld, invitationNotHeldError } from '../domain/grant-rule.ts';
import { callerGrantsOf } from './caller-grants.ts';
import { applicationDecider } from '../domain/application.ts';

export interface InvitationCommandDeps {
  store: EventStore;
  /** Look-ups made before any tenant is known (a user by e-mail across tenants). */
  ownerPool: Pool;
  links: InvitationLinks;
  clock: Clock;
  mailLimits: Pick<InvitationMailLimits, 'reserve'>;
  /** The process's member queries (is an address a member already?). */
  memberQueries: Pick<MemberQueries, 'hasMemberWithEmail'>;
}

const latest = (...positions: (Position | null)[]) =>
  positions.reduce<Position | null>(
    (last, position) => (position && (!last || comparePositions(position, last) > 0) ? position : last),
    null,
  );

export class InvitationCommands {
  private readonly members: Pick<MemberQueries, 'hasMemberWithEmail'>;
  private readonly handle: CommandHandler<InvitationState, InvitationCommand, InvitationEvent>;
  private readonly handleUser: CommandHandler<UserState, UserCommand, UserEvent>;
  private readonly handleMember: CommandHandler<MemberState, MemberCommand, MemberEvent>;

  private readonly deps: InvitationCommandDeps;
  constructor(deps: InvitationCommandDeps) {
    this.deps = deps;
    this.members = deps.memberQueries;
    this.handle = commandHandler(deps.store, invitationDecider, (command) =>
      streams.invitation(command.tenantId, command.invitationId),
    );
    this.handleUser = commandHandler(deps.store, userDecider, (command) => streams.user(command.userId));
    this.handleMember = commandHandler(deps.store, memberDecider, (command) =>
      streams.member(command.tenantId, command.memberId),
    );
  }

  private responseOf(outcome: CommandOutcome<InvitationState, InvitationEvent>): InvitationResponse {
    if (outcome.state.status !== 'pending')
      throw new Error('the invitation is not pending after the command');
    const { link_version: _version, token_hash: _hash, id, ...rest } = outcome.state.invitation;
    return { id, ...rest, status: invitationStatusAt(rest.expires_at, this.deps.clock.now()) };
  }

  private linkHash(tenantId: string, invitationId: string) {
    return (linkVersion: number) => this.deps.links.tokenHash({ tenantId, invitationId, linkVersion });
  }

  /**
   * An invitation grants the ADMIN role: only a caller holding all of it, with no expiry, may make
   * or resend one (invitationNotHeld; a 403 naming body.role), before anything is claimed or sent.
   */
  private async assertMayInvite(principal: Principal) {
    // The quota plays no part: a role is not a request limit.
    const notHeld = invitationNotHeld(await callerGrantsOf(this.deps.store, principal, Infinity));
    if (notHeld.length > 0) throw invitationNotHeldError(notHeld);
  }

  /**
   * A new invitation (PENDING, 72 hours). One invitation per address and tenant: the invitation
   * claims its address in its own append, so of concurrent invitations of one address exactly one
   * is stored, however far behind the read models are.
   */
  async create(principal: Principal, email: string, correlationId: string) {
    await this.assertMayInvite(principal);
    const tenantId = principal.tenantId;
    const member = await this.members.hasMemberWithEmail(tenantId, email);
    if (member) throw conflict('A member of this tenant has this e-mail address.');
    const invited = () => conflict('This e-mail address already has an invitation: resend it instead.');
    // Before the e-mail caps: a known duplicate costs no e-mail slot (the append decides races).
    const claimed = await this.deps.store.claimHolder(
      tenancyClaimScopes.invitationEmail,
      invitationEmailKey(tenantId, email),
    );
    if (claimed) throw invited();
    const invitationId = randomUUID();
    const release = await this.deps.mailLimits.reserve(tenantId, invitationId, email);
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      {
        type: 'CreateInvitation',
        invitationId,
        email,
        linkHash: this.linkHash(tenantId, invitationId),
        ...acting,
      },
      metadata,
      { newStream: true },
    ).catch(async (error: unknown) => {
      await release();
      throw error instanceof UniqueClaimTaken ? invited() : error;
    });
    return { invitation: this.responseOf(outcome), position: outcome.position };
  }

  /** A new link version (every earlier link stops working) and 72 hours from now. */
  async resend(principal: Principal, invitationId: string, correlationId: string) {
    await this.assertMayInvite(principal);
    const stream = streams.invitation(principal.tenantId, invitationId);
    const { state: current } = await aggregateStream(this.deps.store, stream, invitationDecider);
    // Only a pending invitation sends an e-mail; anything else is refused by the decider below.
    const release =
      current.status === 'pending'
        ? await this.deps.mailLimits.reserve(principal.tenantId, invitationId, current.invitation.email)
        : async () => {};
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      {
        type: 'ResendInvitation',
        invitationId,
        linkHash: this.linkHash(principal.tenantId, invitationId),
        ...acting,
      },
      metadata,
    ).catch(async (error: unknown) => {
      await release();
      throw error;
    });
    return { invitation: this.responseOf(outcome), position: outcome.position };
  }

  async delete(principal: Principal, invitationId: string, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle({ type: 'DeleteInvitation', invitationId, ...acting }, metadata);
    return { position: outcome.position };
  }

  /**
   * Accepts a link. InvitationAccepted is the commit point: it is appended first, against the
   * invitation as it was checked, so a resend or delete in between makes it fail before anything
   * is written. The user (when the address is new) and the ADMIN member follow, under ids derived
   * from the address and the invitation, so a retry of the same link after a crash, or a
   * concurrent acceptance, completes the same member instead of adding another.
   */
  /**
   * What a link invites to (the tenant's name, the address, until when), for the accept page: only
   * for a link whose mac is ours and whose invitation is pending at this version, so a wrong,
   * stale, used or expired link learns nothing of the tenant (the same refusals as accept).
   */
  async describeLink(token: string): Promise<InvitationLinkResponse> {
    const { store, links, ownerPool, clock } = this.deps;
    const link = links.parse(token);
    if (!link)
      throw badRequest('This is not a valid invitation link.', { 'body.token': ['Not a valid link'] });
    const { state } = await aggregateStream(
      store,
      streams.invitation(link.tenantId, link.invitationId),
      invitationDecider,
    );
    const invitation = checkLink(
      state,
      { linkVersion: link.linkVersion, tokenHash: hashLinkToken(token) },
      clock.now().toISOString(),
    );
    await this.assertInviterStands(link.tenantId, invitation);
    const tenant = await ownerPool.query<{ name: string }>('SELECT name FROM tenants WHERE id = $1', [
      link.tenantId,
    ]);
    if (!tenant.rows[0]) throw linkGone('This tenant no longer exists.');
    return { tenant_name: tenant.rows[0].name, email: invitation.email, expires_at: invitation.expires_at };
  }

  /**
   * An invitation stands only while its inviter does (inviterWithdrawal): the sender of its
   * current link, as its stream has it now (an application), or as a member (a user). Otherwise
   * the link is gone (410), before anything is written.
   */
  private async assertInviterStands(tenantId: string, invitation: InvitationView) {
    const inviterId = invitation.modified_by ?? invitation.created_by;
    const { state: application } = await aggregateStream(
      this.deps.store,
      streams.application(tenantId, inviterId),
      applicationDecider,
    );
    const withdrawal =
      application.status === 'absent'
        ? inviterWithdrawal({
            kind: 'user',
            member:
              (await this.deps.store.claimHolder(
                tenancyClaimScopes.tenantMember,
                tenantMemberKey(tenantId, inviterId),
              )) !== undefined,
          })
        : inviterWithdrawal({
            kind: 'application',
            grants: application.status === 'active' ? application.application : undefined,
          });
    if (withdrawal) throw linkGone(withdrawal);
  }

  async accept(
    body: AcceptInvitationBody,
    correlationId: string,
  ): Promise<{
    member: MemberResponse;
    position: Position | null;
  }> {
    const { store, links, ownerPool, clock } = this.deps;
    const link = links.parse(body.token);
    if (!link)
      throw badRequest('This is not a valid invitation link.', { 'body.token': ['Not a valid link'] });
    const { tenantId, invitationId, linkVersion } = link;
    const tokenHash = hashLinkToken(body.token);
    const now = clock.now().toISOString();
    const memberId = memberIdOfInvitation(tenantId, invitationId);
    const { state } = await aggregateStream(
      store,
      streams.invitation(tenantId, invitationId),
      invitationDecider,
    );
    // Accepted already through this very link: a retry, or a concurrent twin; finish it.
    const finishing =
      state.status === 'accepted' && state.memberId === memberId && state.linkVersion === linkVersion;
    const invitation = finishing ? undefined : checkLink(state, { linkVersion, tokenHash }, now);
    if (invitation) await this.assertInviterStands(tenantId, invitation);
    const email = finishing ? state.email : invitation!.email;
    const tenant = await ownerPool.query('SELECT 1 FROM tenants WHERE id = $1', [tenantId]);
    if (tenant.rowCount === 0) throw linkGone('This tenant no longer exists.');

    // The one user of this address, whichever path registered it (its claim, as committed).
    const holder = await store.claimHolder(tenancyClaimScopes.userEmail, userEmailKey(email));
    const userId = holder ?? userIdOfEmail(email);
    const existingUser = holder
      ? await ownerPool.query<{ first_name: string | null; last_name: string | null }>(
          'SELECT first_name, last_name FROM users WHERE id = $1',
          [holder],
        )
      : undefined;
    const metadata: EventMetadata = {
      tenant_id: tenantId,
      actor_id: userId,
      actor_type: 'user',
      correlation_id: correlationId,
    };
    const membership = await store.claimHolder(
      tenancyClaimScopes.tenantMember,
      tenantMemberKey(tenantId, userId),
    );
    if (membership && membership !== memberId) throw conflict('This user is already a member of the tenant.');

    const registration: UserCommand | null = holder
      ? null
      : {
          type: 'RegisterUser',
          userId,
          email,
          ...(body.first_name === undefined ? {} : { firstName: body.first_name }),
          ...(body.last_name === undefined ? {} : { lastName: body.last_name }),
          now,
        };
    // Every step is decided before the first append: input the user step would refuse fails here,
    // not after the invitation is used up.
    if (registration) userDecider.decide(registration, userDecider.initialState());

    const closed = await this.closeInvitation(
      tenantId,
      invitationId,
      { linkVersion, tokenHash, memberId, userId, now },
      correlationId,
    );

    let userPosition: Position | null = null;
    let names = {
      first_name: existingUser?.rows[0]?.first_name,
      last_name: existingUser?.rows[0]?.last_name,
    };
    if (registration) {
      try {
        const registered = await this.handleUser(registration, metadata, { newStream: true });
        userPosition = registered.position;
        names = { first_name: body.first_name, last_name: body.last_name };
      } catch (error) {
        // Registered meanwhile under the same id (a concurrent acceptance): the same user.
        if (
          !isDomainError(error, 'already-exists') &&
          !(error instanceof UniqueClaimTaken && error.holder === userId)
        )
          throw error;
      }
    }

    let memberPosition: Position | null = null;
    try {
      const added = await this.handleMember(
        { type: 'AddMember', memberId, tenantId, userId, role: 'ADMIN', actorId: userId, now },
        metadata,
        { newStream: true },
      );
      memberPosition = added.position;
    } catch (error) {
      // The member exists: this link was used (by a concurrent acceptance that got there first,
      // or earlier). A used link is gone; only an acceptance that stopped before this step is
      // completed by a retry.
      if (isDomainError(error, 'already-exists'))
        throw linkGone('This invitation has already been accepted.');
      // The user became a member through another invitation meanwhile.
      if (error instanceof UniqueClaimTaken) throw conflict('This user is already a member of the tenant.');
      throw error;
    }

    const member: MemberResponse = {
      id: memberId,
      tenant_id: tenantId,
      role: 'ADMIN',
      user: {
        id: userId,
        email,
        ...(names.first_name ? { first_name: names.first_name } : {}),
        ...(names.last_name ? { last_name: names.last_name } : {}),
      },
      created_by: userId,
      created_at: now,
    };
    return { member, position: latest(userPosition, memberPosition, closed) };
  }

  /** InvitationAccepted, once: a concurrent twin that already closed it leaves nothing to do. */
  private async closeInvitation(
    tenantId: string,
    invitationId: string,
    accept: { linkVersion: number; tokenHash: string; memberId: string; userId: string; now: string },
    correlationId: string,
  ): Promise<Position | null> {
    const outcome = await this.handle(
      { type: 'AcceptInvitation', invitationId, tenantId, ...accept },
      { tenant_id: tenantId, actor_id: accept.userId, actor_type: 'user', correlation_id: correlationId },
    );
    return outcome.position;
  }
}
