import { describe, expect, it } from 'vitest';
import type { EventOf } from '@tokenvault/cqrs';
import { fixedClock, poolAnsweringNoRows, storedEvents, testPrincipal } from '@tokenvault/cqrs/testing';
import type { EventMetadata } from '@tokenvault/eventstore';
import { InMemoryEventStore } from '@tokenvault/eventstore/testing';
import { problemWith } from '@tokenvault/platform/testing';
import { streams, type TenancyEvent } from '../domain/tenancy.events.ts';
import { InvitationLinks } from '../domain/invitation-link.ts';
import { invitationEmailKey, tenancyClaims, tenancyClaimScopes } from '../domain/tenancy.uniqueness.ts';
import { InvitationCommands } from './invitations.commands.ts';

const tenantId = '3a9e1f40-0000-4000-8000-000000000001';
const actorId = '3a9e1f40-0000-4000-8000-000000000002';
const invitationId = '3a9e1f40-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';
const correlationId = 'request-1';
const principal = testPrincipal(tenantId, actorId, [], { actorType: 'user' });
const metadata: EventMetadata = {
  tenant_id: tenantId,
  actor_id: actorId,
  actor_type: 'user',
  correlation_id: correlationId,
};
const links = new InvitationLinks(Buffer.alloc(32, 7).toString('base64'));

const invitationCreated: EventOf<TenancyEvent, 'InvitationCreated'> = {
  type: 'InvitationCreated',
  data: {
    invitation_id: invitationId,
    tenant_id: tenantId,
    email: 'ada@example.com',
    link_version: 1,
    token_hash: 'hash',
    expires_at: '2026-03-03T00:00:00.000Z',
    created_by: actorId,
    created_at: '2026-02-28T00:00:00.000Z',
  },
};

/** The handler on an in-memory store keeping tenancy's claims; the e-mail slots it takes and gives back are counted. */
async function given(history: EventOf<TenancyEvent, 'InvitationCreated'>[] = []) {
  const store = new InMemoryEventStore({ uniqueness: tenancyClaims });
  for (const event of history) {
    await store.given(streams.invitation(tenantId, event.data.invitation_id), [{ ...event, metadata }]);
  }
  const mail = { reserved: 0, released: 0 };
  const commands = new InvitationCommands({
    store,
    memberQueries: { hasMemberWithEmail: async () => false },
    ownerPool: poolAnsweringNoRows(),
    links,
    clock: fixedClock(now),
    mailLimits: {
      reserve: async () => {
        mail.reserved++;
        return async () => void mail.released++;
      },
    },
  });
  return { store, commands, mail };
}

describe('InvitationCommands against an in-memory event store', () => {
  it('create: appends InvitationCreated (link version 1, 72 hours) and claims the address', async () => {
    const { store, commands, mail } = await given();
    const { invitation } = await commands.create(principal, 'ada@example.com', correlationId);
    expect(await storedEvents(store, streams.invitation(tenantId, invitation.id))).toEqual([
      {
        type: 'InvitationCreated',
        data: {
          invitation_id: invitation.id,
          tenant_id: tenantId,
          email: 'ada@example.com',
          link_version: 1,
          token_hash: links.tokenHash({ tenantId, invitationId: invitation.id, linkVersion: 1 }),
          expires_at: '2026-03-04T00:00:00.000Z',
          created_by: actorId,
          created_at: now,
        },
        metadata,
      },
    ]);
    expect(
      await store.claimHolder(
        tenancyClaimScopes.invitationEmail,
        invitationEmailKey(tenantId, 'ADA@example.com'),
      ),
    ).toBe(invitation.id);
    expect(mail).toEqual({ reserved: 1, released: 0 });
  });

  it('create: an address with an invitation is a 409 that costs no e-mail slot', async () => {
    const { store, commands, mail } = await given([invitationCreated]);
    await expect(commands.create(principal, 'Ada@Example.com', correlationId)).rejects.toSatisfy(
      problemWith(409),
    );
    expect(mail).toEqual({ reserved: 0, released: 0 });
    expect((await store.readAll({ limit: 10 })).map((event) => event.type)).toEqual(['InvitationCreated']);
  });

  it('resend: a new link version and 72 hours from now', async () => {
    const { store, commands, mail } = await given([invitationCreated]);
    await commands.resend(principal, invitationId, correlationId);
    expect((await storedEvents(store, streams.invitation(tenantId, invitationId))).at(-1)).toEqual({
      type: 'InvitationResent',
      data: {
        invitation_id: invitationId,
        tenant_id: tenantId,
        link_version: 2,
        token_hash: links.tokenHash({ tenantId, invitationId, linkVersion: 2 }),
        expires_at: '2026-03-04T00:00:00.000Z',
        modified_by: actorId,
        modified_at: now,
      },
      metadata,
    });
    expect(mail).toEqual({ reserved: 1, released: 0 });
  });

  it('resend: an invitation that does not exist is a 404 that reserves no e-mail slot', async () => {
    const { commands, mail } = await given();
    await expect(commands.resend(principal, invitationId, correlationId)).rejects.toSatisfy(problemWith(404));
    expect(mail).toEqual({ reserved: 0, released: 0 });
  });

  it('delete: appends InvitationDeleted and frees the address', async () => {
    const { store, commands } = await given([invitationCreated]);
    await commands.delete(principal, invitationId, correlationId);
    expect((await storedEvents(store, streams.invitation(tenantId, invitationId))).at(-1)).toEqual({
      type: 'InvitationDeleted',
      data: { invitation_id: invitationId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
      metadata,
    });
    expect(
      await store.claimHolder(
        tenancyClaimScopes.invitationEmail,
        invitationEmailKey(tenantId, 'ada@example.com'),
      ),
    ).toBeUndefined();
  });
});
