import { randomUUID } from 'node:crypto';
import { executeCommand, aggregateStream, metadataOf, type CommandOutcome } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { unauthorized, type Principal } from '@tokenvault/platform';
import type { CreateApplicationBody, UpdateApplicationBody } from '@tokenvault/contracts';
import { generateApiKey, hashApiKey } from '../domain/api-key.ts';
import {
  applicationDecider,
  type ApplicationEvent,
  type ApplicationState,
  type ApplicationView,
} from '../domain/application.ts';
import type { Clock } from '../domain/clock.ts';
import { streams } from '../domain/events.ts';
import {
  operatorGrants,
  quotaOf,
  serviceDefaultQuota,
  type ApplicationCaller,
} from '../domain/grant-rule.ts';

function viewOf(outcome: CommandOutcome<ApplicationState, ApplicationEvent>): ApplicationView {
  if (outcome.state.status !== 'active') throw new Error('the application is not active after the command');
  return outcome.state.application;
}

export class ApplicationCommands {
  private readonly store: EventStore;
  private readonly serviceDefaultPerMinute: number;
  /** `rateLimitPerMinute`: RATE_LIMIT_PER_MINUTE, the quota of applications without their own. */
  private readonly clock: Clock;
  constructor(store: EventStore, rateLimitPerMinute: number, clock: Clock) {
    this.store = store;
    this.clock = clock;
    this.serviceDefaultPerMinute = serviceDefaultQuota(rateLimitPerMinute);
  }

  /**
   * The caller's own application as its stream has it now: its type is not part of the principal,
   * and the stream is fresher than a cached principal.
   */
  private async callerGrants(principal: Principal): Promise<ApplicationCaller> {
    // A member (OWNER or ADMIN) has full access: every grant, like the operator.
    if (principal.actorType === 'user') {
      return { ...operatorGrants, serviceDefaultPerMinute: this.serviceDefaultPerMinute };
    }
    const { state } = await aggregateStream(
      this.store,
      streams.application(principal.tenantId, principal.actorId),
      applicationDecider,
    );
    if (state.status !== 'active') throw unauthorized();
    const { type, permissions, rules, rate_limit } = state.application;
    const serviceDefaultPerMinute = this.serviceDefaultPerMinute;
    return {
      type,
      permissions,
      rules,
      requestsPerMinute: quotaOf(rate_limit, serviceDefaultPerMinute),
      serviceDefaultPerMinute,
    };
  }

  async create(principal: Principal, body: CreateApplicationBody, correlationId: string) {
    const applicationId = randomUUID();
    const key = generateApiKey(body.type);
    const outcome = await executeCommand(
      this.store,
      streams.application(principal.tenantId, applicationId),
      applicationDecider,
      {
        type: 'CreateApplication',
        applicationId,
        tenantId: principal.tenantId,
        name: body.name,
        applicationType: body.type,
        permissions: body.permissions,
        rules: body.rules,
        ...(body.rate_limit ? { rateLimit: body.rate_limit } : {}),
        caller: await this.callerGrants(principal),
        keyHash: hashApiKey(key),
        actorId: principal.actorId,
        now: this.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
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
    const outcome = await executeCommand(
      this.store,
      streams.application(principal.tenantId, applicationId),
      applicationDecider,
      {
        type: 'UpdateApplication',
        applicationId,
        tenantId: principal.tenantId,
        name: body.name,
        permissions: body.permissions,
        rules: body.rules,
        ...(body.rate_limit ? { rateLimit: body.rate_limit } : {}),
        caller: await this.callerGrants(principal),
        actorId: principal.actorId,
        now: this.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    return { application: viewOf(outcome), position: outcome.position };
  }

  async delete(principal: Principal, applicationId: string, correlationId: string) {
    const outcome = await executeCommand(
      this.store,
      streams.application(principal.tenantId, applicationId),
      applicationDecider,
      {
        type: 'DeleteApplication',
        applicationId,
        tenantId: principal.tenantId,
        caller: await this.callerGrants(principal),
        actorId: principal.actorId,
        now: this.clock.now().toISOString(),
      },
      metadataOf(principal, correlationId),
    );
    return { position: outcome.position };
  }
}
