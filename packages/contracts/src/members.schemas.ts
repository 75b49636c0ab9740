import { z } from 'zod';
import { timestamp, uuid } from './common.ts';

export const memberRoles = ['OWNER', 'ADMIN'] as const;

export const userSchema = z.object({
  id: uuid,
  email: z.string().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  picture: z.string().optional(),
});
export type UserResponse = z.output<typeof userSchema>;

export const memberSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  role: z.enum(memberRoles),
  user: userSchema,
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type MemberResponse = z.output<typeof memberSchema>;
