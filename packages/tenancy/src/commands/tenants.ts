import { executeCommand, metadataOf } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Clock } from '../domain/clock.ts';
import type { Principal } from '@tokenvault/platform';
import type { TenantResponse, UpdateTenantBody } from '@tokenvault/contracts';
import { streams } from '../domain/events.ts';
import { tenantDecider } from '../domain/tenant.ts';

export class TenantCommands {
  private readonly store: EventStore;
  private readonly clock: Clock;
  constructor(store: EventStore, clock: Clock) {
    this.store = store;
    this.clock = clock;
  }

  async update(principal: Principal, body: UpdateTenantBody, correlationId: string) {
    const outcome = await executeCommand(
      this.store,
      streams.tenant(principal.tenantId),
      tenantDecider,
      {
        type: 'UpdateTenant',
        tenantId: principal.tenantId,
        name: body.name,
        ...(body.settings?.deduplicate_tokens
          ? { settings: { deduplicate_tokens: body.settings.deduplicate_tokens } }
          : {}),
        actorId: principal.actorId,
        now: this.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    if (outcome.state.status !== 'active') throw new Error('the tenant is not active after an update');
    const tenant: TenantResponse = outcome.state.tenant;
    return { tenant, position: outcome.position };
  }

  /** Its keys stop working and its data key is destroyed once the projection applied this. */
  async delete(principal: Principal, correlationId: string) {
    const outcome = await executeCommand(
      this.store,
      streams.tenant(principal.tenantId),
      tenantDecider,
      {
        type: 'DeleteTenant',
        tenantId: principal.tenantId,
        actorId: principal.actorId,
        now: this.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }
}
