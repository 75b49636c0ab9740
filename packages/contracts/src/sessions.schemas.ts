import { z } from 'zod';
import { timestamp, uuid } from './common.ts';
import { memberRoles } from './members.schemas.ts';

export const signInEmailBody = z.strictObject({
  email: z.email({ error: 'Must be an e-mail address' }).max(320),
});

export const createSessionBody = z.strictObject({
  token: z.string().min(1).max(200),
});

const sessionUserSchema = z.object({
  id: uuid,
  email: z.string(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
});

export const membershipSchema = z.object({
  tenant_id: uuid,
  tenant_name: z.string(),
  role: z.enum(memberRoles),
});

/** Who a session signs in as, and where it may act. */
export const currentSessionSchema = z.object({
  expires_at: timestamp,
  user: sessionUserSchema,
  memberships: z.array(membershipSchema),
});
export type CurrentSessionResponse = z.output<typeof currentSessionSchema>;

export const createdSessionSchema = currentSessionSchema.extend({
  /** Shown once: only its SHA-256 is stored. */
  session_token: z.string(),
});
export type CreatedSessionResponse = z.output<typeof createdSessionSchema>;
