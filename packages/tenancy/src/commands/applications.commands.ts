import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  type CommandHandler,
  type CommandOutcome,
} from '@tokenvault/cqrs';
import type { EventStore, Position } from '@tokenvault/eventstore';
import type { Principal } from '@tokenvault/platform';
import type {
  CreateApplicationBody,
  CreatedApplicationKeyResponse,
  CreateApplicationKeyBody,
  UpdateApplicationBody,
} from '@tokenvault/contracts';
import { generateApiKey, hashApiKey } from '../domain/api-key.ts';
import {
  applicationDecider,
  applicationMissing,
  type ApplicationCommand,
  type ApplicationEvent,
  type ApplicationState,
  type ApplicationView,
} from '../domain/application.ts';
import type { Clock } from '@tokenvault/platform';
import { streams } from '../domain/tenancy.events.ts';
import { serviceDefaultQuota, type ApplicationCaller } from '../domain/grant-rule.ts';
import { callerGrantsOf } from './caller-grants.ts';

function viewOf(outcome: CommandOutcome<ApplicationState, ApplicationEvent>): ApplicationView {
  if (outcome.state.status !== 'active') throw new Error('the application is not active after the command');
  return outcome.state.application;
}

export class ApplicationCommands {
  private readonly store: EventStore;
  private readonly serviceDefaultPerMinute: number;
  /** `rateLimitPerMinute`: RATE_LIMIT_PER_MINUTE, the quota of applications without their own. */
  private readonly clock: Clock;
  private readonly handle: CommandHandler<ApplicationState, ApplicationCommand, ApplicationEvent>;
  constructor(store: EventStore, rateLimitPerMinute: number, clock: Clock) {
    this.store = store;
    this.clock = clock;
    this.serviceDefaultPerMinute = serviceDefaultQuota(rateLimitPerMinute);
    this.handle = commandHandler(store, applicationDecider, (command) =>
      streams.application(command.tenantId, command.applicationId),
    );
  }

  /** What the caller holds (callerGrantsOf). */
  private callerGrants(principal: Principal): Promise<ApplicationCaller> {
    return callerGrantsOf(this.store, principal, this.serviceDefaultPerMinute);
  }

  async create(principal: Principal, body: CreateApplicationBody, correlationId: string) {
    const applicationId = randomUUID();
    const key = generateApiKey(body.type);
    const caller = await this.callerGrants(principal);
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle(
      {
        type: 'CreateApplication',
        applicationId,
        name: body.name,
        applicationType: body.type,
        permissions: body.permissions,
        rules: body.rules,
        ...(body.rate_limit ? { rateLimit: body.rate_limit } : {}),
        caller,
        keyHash: hashApiKey(key),
        ...acting,
      },
      metadata,
      { newStream: true },
    );
    return { application: viewOf(outcome), key, position: outcome.position };
  }

  async update(
    principal: Principal,
    applicationId: string,
    body: UpdateApplicationBody,
    correlationId: string,
  ) {
    const caller = await this.callerGrants(principal);
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle(
      {
        type: 'UpdateApplication',
        applicationId,
        name: body.name,
        permissions: body.permissions,
        rules: body.rules,
        ...(body.rate_limit ? { rateLimit: body.rate_limit } : {}),
        caller,
        ...acting,
      },
      metadata,
    );
    return { application: viewOf(outcome), position: outcome.position };
  }

  /**
   * A new key for the application, answered once (only its SHA-256 is kept). Its prefix says the
   * application's type, which never changes, so it is read before the decision.
   */
  async createKey(
    principal: Principal,
    applicationId: string,
    body: CreateApplicationKeyBody,
    correlationId: string,
  ): Promise<{ key: CreatedApplicationKeyResponse; position: Position | null }> {
    const { state } = await aggregateStream(
      this.store,
      streams.application(principal.tenantId, applicationId),
      applicationDecider,
    );
    if (state.status !== 'active') throw applicationMissing();
    const key = generateApiKey(state.application.type);
    const keyId = randomUUID();
    const caller = await this.callerGrants(principal);
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const expiresAt = body?.expires_at === undefined ? undefined : new Date(body.expires_at).toISOString();
    const outcome = await this.handle(
      {
        type: 'CreateApplicationKey',
        applicationId,
        keyId,
        keyHash: hashApiKey(key),
        ...(expiresAt === undefined ? {} : { expiresAt }),
        caller,
        ...acting,
      },
      metadata,
    );
    if (outcome.state.status !== 'active') throw new Error('the application is not active after the command');
    const created = outcome.state.keys.find((candidate) => candidate.id === keyId)!;
    return {
      key: { ...created, tenant_id: principal.tenantId, application_id: applicationId, key },
      position: outcome.position,
    };
  }

  async deleteKey(principal: Principal, applicationId: string, keyId: string, correlationId: string) {
    const caller = await this.callerGrants(principal);
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle(
      { type: 'DeleteApplicationKey', applicationId, keyId, caller, ...acting },
      metadata,
    );
    return { position: outcome.position };
  }

  async delete(principal: Principal, applicationId: string, correlationId: string) {
    const caller = await this.callerGrants(principal);
    const { acting, metadata } = commandContext(principal, correlationId, this.clock);
    const outcome = await this.handle(
      { type: 'DeleteApplication', applicationId, caller, ...acting },
      metadata,
    );
    return { position: outcome.position };
  }
}
