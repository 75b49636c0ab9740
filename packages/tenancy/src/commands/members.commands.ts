import { commandContext, commandHandler, type CommandHandler } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import type { Clock } from '@tokenvault/platform';
import { streams } from '../domain/tenancy.events.ts';
import { memberDecider, type MemberCommand, type MemberEvent, type MemberState } from '../domain/member.ts';

export class MemberCommands {
  private readonly clock: Clock;
  private readonly handle: CommandHandler<MemberState, MemberCommand, MemberEvent>;
  constructor(store: EventStore, clock: Clock) {
    this.clock = clock;
    this.handle = commandHandler(store, memberDecider, (command) =>
      streams.member(command.tenantId, command.memberId),
    );
  }

  /** The member's stream is named by the caller's tenant: another tenant's member is a 404. */
  async remove(principal: Principal, memberId: string, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle({ type: 'RemoveMember', memberId, ...acting }, metadata);
    return { position: outcome.position };
  }
}
