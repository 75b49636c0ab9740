import { z } from 'zod';
import { displayName, timestamp, uuid } from './common.ts';

export const invitationStatuses = ['PENDING', 'EXPIRED'] as const;
export type InvitationStatus = (typeof invitationStatuses)[number];

export const invitationSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  email: z.string(),
  status: z.enum(invitationStatuses),
  expires_at: timestamp,
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type InvitationResponse = z.output<typeof invitationSchema>;

/** The link token comes from the invitation e-mail; no API key is needed. */
export const acceptInvitationBody = z.strictObject({
  token: z.string().min(1, 'Must not be empty').max(500, 'At most 500 characters'),
  first_name: displayName.optional(),
  last_name: displayName.optional(),
});
export type AcceptInvitationBody = z.output<typeof acceptInvitationBody>;

/** `POST /tenants/invitations/link`: the link's token, in a body (never in an address). */
export const invitationLinkBody = z.strictObject({
  token: z.string().min(1, 'Must not be empty').max(500, 'At most 500 characters'),
});

/** What a valid, pending invitation link is for: shown on the accept page before accepting. */
export const invitationLinkSchema = z.object({
  tenant_name: z.string(),
  email: z.string(),
  expires_at: timestamp,
});
export type InvitationLinkResponse = z.output<typeof invitationLinkSchema>;
