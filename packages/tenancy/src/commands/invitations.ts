import { randomUUID } from 'node:crypto';
import {
  executeCommand,
  fold,
  metadataOf,
  type CommandOutcome,
  type ReadModelConsistency,
} from '@tokenvault/cqrs';
import { comparePositions, type EventMetadata, type EventStore, type Position } from '@tokenvault/eventstore';
import {
  badRequest,
  conflict,
  Problem,
  withAdvisoryLock,
  type Pool,
  type Principal,
} from '@tokenvault/platform';
import type { AcceptInvitationBody, InvitationResponse, MemberResponse } from '@tokenvault/contracts';
import type { Clock } from '../domain/clock.ts';
import { streams } from '../domain/events.ts';
import { memberIdOfInvitation, userIdOfEmail } from '../domain/ids.ts';
import {
  checkLink,
  invitationDecider,
  linkGone,
  type InvitationEvent,
  type InvitationState,
} from '../domain/invitation.ts';
import { hashLinkToken, type InvitationLinks } from '../domain/invitation-link.ts';
import { memberDecider } from '../domain/member.ts';
import { userDecider, type UserCommand } from '../domain/user.ts';
import { InvitationQueries, invitationStatusAt } from '../queries/invitations.ts';
import { MemberQueries } from '../queries/members.ts';
import type { InvitationMailLimits } from './invitation-mail-limits.ts';

export interface InvitationCommandDeps {
  store: EventStore;
  appPool: Pool;
  /** Look-ups made before any tenant is known (a user by e-mail across tenants). */
  ownerPool: Pool;
  links: InvitationLinks;
  clock: Clock;
  consistency: ReadModelConsistency;
  mailLimits: InvitationMailLimits;
}

/** How long a lock holder waits for the read model before it lets the next request check. */
const lockedWaitMs = 60_000;

const isConflict = (error: unknown) => error instanceof Problem && error.status === 409;
const latest = (...positions: (Position | null)[]) =>
  positions.reduce<Position | null>(
    (last, position) => (position && (!last || comparePositions(position, last) > 0) ? position : last),
    null,
  );

export class InvitationCommands {
  private readonly invitations: InvitationQueries;
  private readonly members: MemberQueries;

  private readonly deps: InvitationCommandDeps;
  constructor(deps: InvitationCommandDeps) {
    this.deps = deps;
    this.invitations = new InvitationQueries(deps.appPool);
    this.members = new MemberQueries(deps.appPool);
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
   * A new invitation (PENDING, 72 hours). One invitation per address and tenant: the check reads the read models, so creates for the
   * same address run one at a time, each waiting until its invitation is in the read models
   * before the next one checks.
   */
  async create(principal: Principal, email: string, correlationId: string) {
    const tenantId = principal.tenantId;
    return withAdvisoryLock(
      this.deps.ownerPool,
      `invitation:${tenantId}:${email.toLowerCase()}`,
      async () => {
        const member = await this.members.hasMemberWithEmail(tenantId, email);
        if (member) throw conflict('A member of this tenant has this e-mail address.');
        const invited = await this.invitations.hasInvitationFor(tenantId, email);
        if (invited) throw conflict('This e-mail address already has an invitation: resend it instead.');
        const invitationId = randomUUID();
        const release = await this.deps.mailLimits.reserve(tenantId, invitationId, email);
        const outcome = await executeCommand(
          this.deps.store,
          streams.invitation(tenantId, invitationId),
          invitationDecider,
          {
            type: 'CreateInvitation',
            invitationId,
            tenantId,
            email,
            linkHash: this.linkHash(tenantId, invitationId),
            actorId: principal.actorId,
            now: this.deps.clock.now().toISOString(),
          },
          metadataOf(principal, correlationId),
          { newStream: true },
        ).catch(async (error: unknown) => {
          await release();
          throw error;
        });
        // Held until the read model has it (a generous bound: past it the projector is down).
        await this.deps.consistency.writeReadable(outcome.position!, lockedWaitMs);
        return { invitation: this.responseOf(outcome), position: outcome.position };
      },
    );
  }

  /** A new link version (every earlier link stops working) and 72 hours from now. */
  async resend(principal: Principal, invitationId: string, correlationId: string) {
    const stream = streams.invitation(principal.tenantId, invitationId);
    const current = fold(
      invitationDecider,
      (await this.deps.store.readStream(stream)).map(
        (event) => ({ type: event.type, data: event.data }) as InvitationEvent,
      ),
    );
    // Only a pending invitation sends an e-mail; anything else is refused by the decider below.
    const release =
      current.status === 'pending'
        ? await this.deps.mailLimits.reserve(principal.tenantId, invitationId, current.invitation.email)
        : async () => {};
    const outcome = await executeCommand(
      this.deps.store,
      stream,
      invitationDecider,
      {
        type: 'ResendInvitation',
        invitationId,
        tenantId: principal.tenantId,
        linkHash: this.linkHash(principal.tenantId, invitationId),
        actorId: principal.actorId,
        now: this.deps.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    ).catch(async (error: unknown) => {
      await release();
      throw error;
    });
    return { invitation: this.responseOf(outcome), position: outcome.position };
  }

  async delete(principal: Principal, invitationId: string, correlationId: string) {
    const outcome = await executeCommand(
      this.deps.store,
      streams.invitation(principal.tenantId, invitationId),
      invitationDecider,
      {
        type: 'DeleteInvitation',
        invitationId,
        tenantId: principal.tenantId,
        actorId: principal.actorId,
        now: this.deps.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }

  /**
   * Accepts a link. InvitationAccepted is the commit point: it is appended first, against the
   * invitation as it was checked, so a resend or delete in between makes it fail before anything
   * is written. The user (when the address is new) and the ADMIN member follow, under ids derived
   * from the address and the invitation, so a retry of the same link after a crash, or a
   * concurrent acceptance, completes the same member instead of adding another.
   */
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
    const history = await store.readStream(streams.invitation(tenantId, invitationId));
    const state = fold(
      invitationDecider,
      history.map((event) => ({ type: event.type, data: event.data }) as InvitationEvent),
    );
    // Accepted already through this very link: a retry, or a concurrent twin; finish it.
    const finishing =
      state.status === 'accepted' && state.memberId === memberId && state.linkVersion === linkVersion;
    const email = finishing ? state.email : checkLink(state, { linkVersion, tokenHash }, now).email;
    const tenant = await ownerPool.query('SELECT 1 FROM tenants WHERE id = $1', [tenantId]);
    if (tenant.rowCount === 0) throw linkGone('This tenant no longer exists.');

    const existingUser = await ownerPool.query<{
      id: string;
      first_name: string | null;
      last_name: string | null;
    }>(
      'SELECT id, first_name, last_name FROM users WHERE lower(email) = lower($1) ORDER BY created_at, id LIMIT 1',
      [email],
    );
    const userId = existingUser.rows[0]?.id ?? userIdOfEmail(email);
    const metadata: EventMetadata = {
      tenant_id: tenantId,
      actor_id: userId,
      actor_type: 'user',
      correlation_id: correlationId,
    };
    const membership = await ownerPool.query<{ id: string }>(
      'SELECT id FROM tenant_members WHERE tenant_id = $1 AND user_id = $2',
      [tenantId, userId],
    );
    if (membership.rows[0] && membership.rows[0].id !== memberId) {
      throw conflict('This user is already a member of the tenant.');
    }

    const registration: UserCommand | null = existingUser.rows[0]
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
    let names = { first_name: existingUser.rows[0]?.first_name, last_name: existingUser.rows[0]?.last_name };
    if (registration) {
      try {
        const registered = await executeCommand(
          store,
          streams.user(userId),
          userDecider,
          registration,
          metadata,
          { newStream: true },
        );
        userPosition = registered.position;
        names = { first_name: body.first_name, last_name: body.last_name };
      } catch (error) {
        // Registered meanwhile (a concurrent acceptance, or a read model behind): the same user.
        if (!isConflict(error)) throw error;
      }
    }

    let memberPosition: Position | null = null;
    try {
      const added = await executeCommand(
        store,
        streams.member(tenantId, memberId),
        memberDecider,
        { type: 'AddMember', memberId, tenantId, userId, role: 'ADMIN', actorId: userId, now },
        metadata,
        { newStream: true },
      );
      memberPosition = added.position;
    } catch (error) {
      // The member exists: this link was used (by a concurrent acceptance that got there first,
      // or earlier). A used link is gone; only an acceptance that stopped before this step is
      // completed by a retry.
      if (isConflict(error)) throw linkGone('This invitation has already been accepted.');
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
    const outcome = await executeCommand(
      this.deps.store,
      streams.invitation(tenantId, invitationId),
      invitationDecider,
      { type: 'AcceptInvitation', invitationId, tenantId, ...accept },
      { tenant_id: tenantId, actor_id: accept.userId, actor_type: 'user', correlation_id: correlationId },
    );
    return outcome.position;
  }
}
