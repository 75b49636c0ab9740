import { randomUUID } from 'node:crypto';
import { commandHandler } from '@tokenvault/cqrs';
import { UniqueClaimTaken, type EventMetadata, type EventStore } from '@tokenvault/eventstore';
import type { Vault } from '@tokenvault/vault';
import { permissions, updateTenantBody } from '@tokenvault/contracts';
import { badRequest, isDomainError } from '@tokenvault/platform';
import { parseEmailAddress } from '../domain/email.ts';
import type { Position } from '@tokenvault/eventstore';
import { generateApiKey, hashApiKey } from '../domain/api-key.ts';
import { applicationDecider } from '../domain/application.ts';
import { streams } from '../domain/tenancy.events.ts';
import { operatorGrants } from '../domain/grant-rule.ts';
import { memberDecider } from '../domain/member.ts';
import { tenantDecider } from '../domain/tenant.ts';
import { userDecider } from '../domain/user.ts';
import { userIdOfEmail } from '../domain/ids.ts';
import { systemClock, type Clock } from '@tokenvault/platform';
import { tenancyClaimScopes, userEmailKey } from '../domain/tenancy.uniqueness.ts';

export interface BootstrapResult {
  tenant_id: string;
  owner_user_id: string;
  application_id: string;
  api_key: string;
  /** Where the last event stands: wait for it before using the key. */
  position: Position;
}

/**
 * The first key has to come from somewhere: a tenant, its owner (a new user and the OWNER
 * member) and a management application holding every permission.
 */
export async function bootstrapTenant(
  store: EventStore,
  vault: Vault,
  input: { tenantName: string; ownerEmail: string },
  clock: Clock = systemClock,
): Promise<BootstrapResult> {
  // Four appends follow: the input is checked by the API's own rules before the first of them.
  const tenantName = updateTenantBody.shape.name.safeParse(input.tenantName);
  const ownerEmail = parseEmailAddress(input.ownerEmail);
  if (!tenantName.success || ownerEmail === undefined) {
    throw badRequest('The bootstrap input is not valid.', {
      ...(tenantName.success ? {} : { tenant_name: tenantName.error.issues.map((issue) => issue.message) }),
      ...(ownerEmail === undefined ? { owner_email: ['Must be a single e-mail address'] } : {}),
    });
  }
  const tenantId = randomUUID();
  // The one user of the address: an existing one becomes the owner, a new one gets its derived id.
  const holder = await store.claimHolder(tenancyClaimScopes.userEmail, userEmailKey(ownerEmail));
  const ownerId = holder ?? userIdOfEmail(ownerEmail);
  const applicationId = randomUUID();
  const now = clock.now().toISOString();
  const metadata: EventMetadata = { tenant_id: tenantId, actor_id: ownerId, actor_type: 'user' };
  await vault.createTenantKeys(tenantId);
  const handleUser = commandHandler(store, userDecider, (command) => streams.user(command.userId));
  const handleTenant = commandHandler(store, tenantDecider, (command) => streams.tenant(command.tenantId));
  const handleMember = commandHandler(store, memberDecider, (command) =>
    streams.member(command.tenantId, command.memberId),
  );
  const handleApplication = commandHandler(store, applicationDecider, (command) =>
    streams.application(command.tenantId, command.applicationId),
  );
  if (!holder) {
    await handleUser({ type: 'RegisterUser', userId: ownerId, email: ownerEmail, now }, metadata, {
      newStream: true,
    }).catch((error: unknown) => {
      // Registered meanwhile under the same derived id (a concurrent bootstrap or acceptance).
      const sameUser =
        isDomainError(error, 'already-exists') ||
        (error instanceof UniqueClaimTaken && error.holder === ownerId);
      if (!sameUser) throw error;
    });
  }
  await handleTenant(
    {
      type: 'CreateTenant',
      tenantId,
      name: tenantName.data,
      ownerId,
      settings: { deduplicate_tokens: 'false' },
      actorId: ownerId,
      now,
    },
    metadata,
    { newStream: true },
  );
  const memberId = randomUUID();
  await handleMember(
    { type: 'AddMember', memberId, tenantId, userId: ownerId, role: 'OWNER', actorId: ownerId, now },
    metadata,
    { newStream: true },
  );
  const apiKey = generateApiKey('management');
  const outcome = await handleApplication(
    {
      type: 'CreateApplication',
      applicationId,
      tenantId,
      name: 'Management (bootstrap)',
      applicationType: 'management',
      permissions: [...permissions],
      rules: [],
      caller: operatorGrants,
      keyHash: hashApiKey(apiKey),
      actorId: ownerId,
      now,
    },
    metadata,
    { newStream: true },
  );
  if (!outcome.position) throw new Error('bootstrap appended nothing');
  return {
    tenant_id: tenantId,
    owner_user_id: ownerId,
    application_id: applicationId,
    api_key: apiKey,
    position: outcome.position,
  };
}
