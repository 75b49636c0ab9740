import { z } from 'zod';

export const uuid = z.uuid({ error: 'Must be a UUID' });

/**
 * Instants whose ISO form has a four-digit year (0001–9999 UTC): beyond them toISOString writes
 * `+010000-…`, which PostgreSQL cannot read, and a stored event holding one would stop the
 * projection that reads it.
 */
const earliestInstant = Date.parse('0001-01-01T00:00:00.000Z');
const latestInstant = Date.parse('9999-12-31T23:59:59.999Z');
export const isRepresentableInstant = (instant: Date) =>
  instant.getTime() >= earliestInstant && instant.getTime() <= latestInstant;
const representableMessage = 'Must lie between the years 0001 and 9999 (UTC)';

export const timestamp = z.iso
  .datetime({ offset: true })
  .refine((value) => isRepresentableInstant(new Date(value)), representableMessage);

/** A date (midnight UTC) or a date-time with an offset, as a Date. */
export const instant = z
  .union([z.iso.date(), z.iso.datetime({ offset: true })], {
    error: 'Must be an ISO 8601 date (2026-01-31) or date-time (2026-01-31T12:00:00Z)',
  })
  .transform((value) => new Date(value.length === 10 ? `${value}T00:00:00Z` : value))
  .refine(isRepresentableInstant, representableMessage);

export const idParams = z.object({ id: uuid });

/**
 * Characters a name shown to people must not hold: C0 and C1 controls (CR/LF among them), DEL,
 * the line and paragraph separators and the bidi embeddings, overrides and isolates. Names end
 * up in e-mails sent to outsiders, where these could forge headers or disguise text; unpaired
 * surrogates cannot be stored at all.
 */
export const refusedInNames = /[\p{Cc}\p{Cs}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

/** Every name a person gives something (tenant, application, first and last name). */
export const displayName = z
  .string()
  .refine((value) => !refusedInNames.test(value), {
    message: 'Must not contain control characters, line breaks or bidi controls',
    abort: true,
  })
  .trim()
  .min(1, 'Must not be empty')
  .max(200, 'At most 200 characters');

/** A container path like `/pci/high/`: stored lower-case; a rule on `/pci/` covers it. */
export const containerPath = z
  .string()
  .max(200)
  .regex(/^\/([A-Za-z0-9_-]+\/)+$/, 'Must look like /segment/segment/ (letters, digits, _ and -)')
  // The API reference's generated examples take it (a plain "string" would not match the pattern).
  .meta({ examples: ['/pci/high/'] })
  .transform((path) => path.toLowerCase());

export const paginationSchema = z.object({
  total_items: z.number().int(),
  page_number: z.number().int(),
  page_size: z.number().int(),
  total_pages: z.number().int(),
});

export const paginatedSchema = <T extends z.ZodType>(item: T) =>
  z.object({ pagination: paginationSchema, data: z.array(item) });

/**
 * A page that may have been asked for by a cursor (`?start=` from `pagination.next`): counts are
 * null where the route does not count (a cursor page, or a collection too large to count).
 */
export const cursorPaginationSchema = z.object({
  total_items: z.number().int().nullable(),
  page_number: z.number().int().nullable(),
  page_size: z.number().int(),
  total_pages: z.number().int().nullable(),
  /** The cursor of the next page (`?start=`), null at the end. */
  next: z.string().nullable(),
});

export const cursorPageSchema = <T extends z.ZodType>(item: T) =>
  z.object({ pagination: cursorPaginationSchema, data: z.array(item) });
