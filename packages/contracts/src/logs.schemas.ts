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

const sha256Hex = z
  .string()
  .regex(/^[0-9a-f]{64}$/)
  // The API reference's generated examples take it (a plain "string" would not match the pattern).
  .meta({ examples: ['9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'] });

export const logSchema = z.object({
  /** The row's id: its event's global position times 128 plus its index among the event's rows. */
  id: z
    .string()
    .regex(/^\d+$/)
    .meta({ examples: ['1280'] }),
  /** The event the row records. */
  event_id: uuid,
  /** The event's hash in the verifiable log (docs/verifiable-log.md); null until a tree head covers it. */
  event_hash: sha256Hex.nullable(),
  /** The tree head that covers the event; null until one does. GET /logs/{id}/proof proves it. */
  tree_head_number: z.number().int().nullable(),
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

export const logIdParams = z.object({ id: z.string().regex(/^\d{1,30}$/, 'Must be a log row id (digits)') });

const positionSchema = z.object({ commit: z.string(), prepare: z.string() });

/** One tree head of the event log's hash chain (docs/verifiable-log.md). */
export const treeHeadSchema = z.object({
  number: z.number().int(),
  previous_hash: sha256Hex,
  first_position: positionSchema,
  last_position: positionSchema,
  event_count: z.number().int(),
  merkle_root: sha256Hex,
  signed_at: timestamp,
  tree_head_hash: sha256Hex,
  signature: z.string().optional().describe('Ed25519 over the canonical JSON of the tree head, base64'),
  key_id: z.string().optional(),
});

/** What a tenant needs to check one of its log rows against a tree head, offline (SDK: verifyLogProof). */
export const logProofSchema = z.object({
  log_id: z.string(),
  /** The event as logged: its data only as the SHA-256 of its canonical JSON. */
  event: z.object({
    event_id: uuid,
    stream: z.string(),
    revision: z.number().int(),
    type: z.string(),
    data_sha256: sha256Hex,
    metadata: z.record(z.string(), z.unknown()),
    created_at: timestamp,
  }),
  event_hash: sha256Hex,
  global_position: z.string(),
  leaf_index: z.number().int(),
  /** RFC 9162 inclusion path, leaf to root: hashes of other events' subtrees only. */
  merkle_path: z.array(sha256Hex),
  tree_head: treeHeadSchema,
});
export type LogProof = z.output<typeof logProofSchema>;

export const logSigningKeySchema = z.object({
  algorithm: z.literal('Ed25519'),
  key_id: z.string(),
  public_key: z.string().describe('The raw 32-byte public key, base64'),
  public_key_pem: z.string(),
});
