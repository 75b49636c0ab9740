import { aggregateStream } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { unauthorized, type Principal } from '@tokenvault/platform';
import { applicationDecider } from '../domain/application.ts';
import { streams } from '../domain/tenancy.events.ts';
import { operatorGrants, quotaOf, type ApplicationCaller } from '../domain/grant-rule.ts';

/**
 * What the caller of a grant (an application, a key, an invitation) holds: its own application as
 * its stream has it now (its type is not part of the principal, and the stream is fresher than a
 * cached principal), with its key's expiry. A member (OWNER or ADMIN) has full access: every
 * grant, like the operator.
 */
export async function callerGrantsOf(
  store: EventStore,
  principal: Principal,
  serviceDefaultPerMinute: number,
): Promise<ApplicationCaller> {
  if (principal.actorType === 'user') return { ...operatorGrants, serviceDefaultPerMinute };
  const { state } = await aggregateStream(
    store,
    streams.application(principal.tenantId, principal.actorId),
    applicationDecider,
  );
  if (state.status !== 'active') throw unauthorized();
  const { type, permissions, rules, rate_limit } = state.application;
  return {
    type,
    permissions,
    rules,
    requestsPerMinute: quotaOf(rate_limit, serviceDefaultPerMinute),
    serviceDefaultPerMinute,
    ...(principal.keyExpiresAt === undefined ? {} : { keyExpiresAt: principal.keyExpiresAt }),
  };
}
