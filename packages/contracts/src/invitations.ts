import { z } from 'zod';
import { timestamp, uuid } from './common.ts';

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

/**
 * Control characters (NUL among them) and lone surrogates are refused: PostgreSQL cannot store them
 * in an event's JSON, and a name is shown to people.
 */
export const personNameRefusedCharacters = /[\p{Cc}\p{Cs}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const personName = z
  .string()
  .trim()
  .min(1, 'Must not be empty')
  .max(200, 'At most 200 characters')
  .refine(
    (value) => !personNameRefusedCharacters.test(value),
    'Must not contain control characters, direction overrides or unpaired surrogates',
  );

/** The link token comes from the invitation e-mail; no API key is needed. */
export const acceptInvitationBody = z.strictObject({
  token: z.string().min(1, 'Must not be empty').max(500, 'At most 500 characters'),
  first_name: personName.optional(),
  last_name: personName.optional(),
});
export type AcceptInvitationBody = z.output<typeof acceptInvitationBody>;
