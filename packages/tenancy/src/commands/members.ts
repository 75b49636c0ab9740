import { executeCommand, metadataOf } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import type { Clock } from '../domain/clock.ts';
import { streams } from '../domain/events.ts';
import { memberDecider } from '../domain/member.ts';

export class MemberCommands {
  private readonly store: EventStore;
  private readonly clock: Clock;
  constructor(store: EventStore, clock: Clock) {
    this.store = store;
    this.clock = clock;
  }

  /** The member's stream is named by the caller's tenant: another tenant's member is a 404. */
  async remove(principal: Principal, memberId: string, correlationId: string) {
    const outcome = await executeCommand(
      this.store,
      streams.member(principal.tenantId, memberId),
      memberDecider,
      {
        type: 'RemoveMember',
        memberId,
        tenantId: principal.tenantId,
        actorId: principal.actorId,
        now: this.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }
}
