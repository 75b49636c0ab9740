import { commandContext, commandHandler, type CommandHandler } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Clock } from '@tokenvault/platform';
import type { Principal } from '@tokenvault/platform';
import type { TenantResponse, UpdateTenantBody } from '@tokenvault/contracts';
import { streams } from '../domain/tenancy.events.ts';
import { tenantDecider, type TenantCommand, type TenantEvent, type TenantState } from '../domain/tenant.ts';

export class TenantCommands {
  private readonly clock: Clock;
  private readonly handle: CommandHandler<TenantState, TenantCommand, TenantEvent>;
  constructor(store: EventStore, clock: Clock) {
    this.clock = clock;
    this.handle = commandHandler(store, tenantDecider, (command) => streams.tenant(command.tenantId));
  }

  async update(principal: Principal, body: UpdateTenantBody, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle(
      {
        type: 'UpdateTenant',
        name: body.name,
        ...(body.settings?.deduplicate_tokens
          ? { settings: { deduplicate_tokens: body.settings.deduplicate_tokens } }
          : {}),
        ...acting,
      },
      metadata,
    );
    if (outcome.state.status !== 'active') throw new Error('the tenant is not active after an update');
    const tenant: TenantResponse = outcome.state.tenant;
    return { tenant, position: outcome.position };
  }

  /** Its keys stop working and its data key is destroyed once the projection applied this. */
  async delete(principal: Principal, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle({ type: 'DeleteTenant', ...acting }, metadata);
    return { position: outcome.position };
  }
}
