import { aggregateStream } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { withTenant, type Pool } from '@tokenvault/platform';
import { streams } from '../domain/tenancy.events.ts';
import { invitationDecider } from '../domain/invitation.ts';

/** What an invitation e-mail says, read when it is sent. */
export interface InvitationMailFacts {
  email: string;
  linkVersion: number;
  expiresAt: string;
  tenantName: string;
  /** The application or user that created (or last resent) the invitation, by name. */
  inviter: string;
}

/**
 * The invitation as its event stream has it (not the read model, which may lag behind the event
 * that asked for the e-mail), with the tenant's name and the inviter's. Undefined when the
 * invitation is no longer pending (deleted or accepted) or its tenant is gone.
 */
export async function loadInvitationMailFacts(
  store: EventStore,
  appPool: Pool,
  tenantId: string,
  invitationId: string,
): Promise<InvitationMailFacts | undefined> {
  const { state } = await aggregateStream(
    store,
    streams.invitation(tenantId, invitationId),
    invitationDecider,
  );
  if (state.status !== 'pending') return undefined;
  const invitation = state.invitation;
  const inviterId = invitation.modified_by ?? invitation.created_by;
  return withTenant(appPool, tenantId, async (client) => {
    const tenant = await client.query<{ name: string }>('SELECT name FROM tenants WHERE id = $1', [tenantId]);
    if (!tenant.rows[0]) return undefined;
    const inviter = await client.query<{ name: string }>(
      `SELECT name FROM applications WHERE tenant_id = $1 AND id = $2
       UNION ALL
       SELECT coalesce(nullif(trim(concat_ws(' ', first_name, last_name)), ''), email) FROM users WHERE id = $2
       LIMIT 1`,
      [tenantId, inviterId],
    );
    return {
      email: invitation.email,
      linkVersion: invitation.link_version,
      expiresAt: invitation.expires_at,
      tenantName: tenant.rows[0].name,
      inviter: inviter.rows[0]?.name ?? 'An administrator',
    };
  });
}
