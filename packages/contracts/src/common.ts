import { z } from 'zod';

export const uuid = z.uuid({ error: 'Must be a UUID' });
export const timestamp = z.iso.datetime({ offset: true });

export const idParams = z.object({ id: uuid });

/** A container path like `/pci/high/`: stored lower-case; a rule on `/pci/` covers it. */
export const containerPath = z
  .string()
  .max(200)
  .regex(/^\/([A-Za-z0-9_-]+\/)+$/, 'Must look like /segment/segment/ (letters, digits, _ and -)')
  .transform((path) => path.toLowerCase());

export const paginationSchema = z.object({
  total_items: z.number().int(),
  page_number: z.number().int(),
  page_size: z.number().int(),
  total_pages: z.number().int(),
});

export const paginatedSchema = <T extends z.ZodType>(item: T) =>
  z.object({ pagination: paginationSchema, data: z.array(item) });
