import { z } from 'zod';
import { cursorPageSchema, instant, timestamp, uuid } from './common.ts';

export const listLogsQuery = z
  .strictObject({
    entity_type: z.string().min(1).max(50).optional(),
    entity_id: z.string().min(1).max(200).optional(),
    start_date: instant.optional(),
    end_date: instant.optional(),
    page: z.coerce.number().int().min(1).optional(),
    size: z.coerce.number().int().min(1).max(100).default(20),
    /** The opaque cursor of a previous page's pagination.next. */
    start: z.string().min(1).max(200).optional(),
  })
  .refine((query) => !(query.page !== undefined && query.start !== undefined), {
    message: 'Give either page or start (a cursor), not both',
    path: ['start'],
  });
export type ListLogsQuery = z.output<typeof listLogsQuery>;

export const logSchema = z.object({
  tenant_id: uuid,
  actor_id: uuid.optional(),
  actor_type: z.string().optional(),
  entity_type: z.string(),
  entity_id: z.string(),
  operation: z.enum(['create', 'update', 'read', 'delete']),
  message: z.string(),
  created_at: timestamp,
});
export type LogResponse = z.output<typeof logSchema>;

export const logPageSchema = cursorPageSchema(logSchema);

export const entityTypeSchema = z.object({ display_name: z.string(), value: z.string() });
