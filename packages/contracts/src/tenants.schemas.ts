import { z } from 'zod';
import { displayName, timestamp, uuid } from './common.ts';

export const tenantSettingsSchema = z.strictObject({
  deduplicate_tokens: z.enum(['true', 'false'], { error: 'Must be the text "true" or "false"' }).optional(),
});

export const updateTenantBody = z.strictObject({
  name: displayName,
  settings: tenantSettingsSchema.optional(),
});
export type UpdateTenantBody = z.output<typeof updateTenantBody>;

export const tenantSchema = z.object({
  id: uuid,
  owner_id: uuid,
  name: z.string(),
  settings: z.object({ deduplicate_tokens: z.enum(['true', 'false']) }),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type TenantResponse = z.output<typeof tenantSchema>;
