import { z } from 'zod';
import { timestamp, uuid } from './common.ts';
import { maxFormulaCodeLength } from './reactors.schemas.ts';

/** The longest `timeout` a proxy may ask for, in seconds (PROXY_TIMEOUT_MS still caps it). */
export const maxProxyTimeoutSeconds = 300;

/** A `code` transform: `module.exports = async function (req) { return { headers, body } }`. */
const transform = z.strictObject({
  type: z.literal('code'),
  code: z
    .string()
    .min(1, 'Must not be empty')
    .max(maxFormulaCodeLength, `At most ${maxFormulaCodeLength} characters`),
});
const transforms = z.array(transform).max(10, 'At most 10 transforms');

const proxyFields = {
  name: z.string().trim().min(1, 'Must not be empty').max(200, 'At most 200 characters'),
  /** Checked by the proxy context against the destination rules (https unless allow-listed). */
  destination_url: z.string().min(1, 'Must not be empty').max(2000, 'At most 2000 characters'),
  request_reactor_id: uuid.optional(),
  response_reactor_id: uuid.optional(),
  request_transforms: transforms.default([]),
  response_transforms: transforms.default([]),
  application: z.strictObject({ id: uuid }).optional(),
  /** Values a proxy's transforms and reactors read (often credentials: sealed at rest). */
  configuration: z.record(z.string(), z.string()).default({}),
  require_auth: z.boolean().default(true),
  /** Seconds to wait for the destination; lowers the service's PROXY_TIMEOUT_MS, never raises it. */
  timeout: z
    .number()
    .positive('Must be positive')
    .max(maxProxyTimeoutSeconds, `At most ${maxProxyTimeoutSeconds}`)
    .optional(),
};

/** Create and update take the same body: an update replaces every field. */
export const proxyBody = z.strictObject(proxyFields);
export type ProxyBody = z.output<typeof proxyBody>;

/** A patch changes the fields it names only (`null` removes an optional one). */
export const patchProxyBody = z.strictObject({
  name: proxyFields.name.optional(),
  destination_url: proxyFields.destination_url.optional(),
  request_reactor_id: uuid.nullable().optional(),
  response_reactor_id: uuid.nullable().optional(),
  request_transforms: transforms.optional(),
  response_transforms: transforms.optional(),
  application: z.strictObject({ id: uuid }).nullable().optional(),
  configuration: z.record(z.string(), z.string()).optional(),
  require_auth: z.boolean().optional(),
  timeout: proxyFields.timeout.unwrap().nullable().optional(),
});
export type PatchProxyBody = z.output<typeof patchProxyBody>;

export const proxySchema = z.object({
  id: uuid,
  /** What invokes it: `SVC-PROXY-KEY` or the query parameter `svc-proxy-key`. */
  key: z.string(),
  tenant_id: uuid,
  name: z.string(),
  destination_url: z.string(),
  request_reactor_id: uuid.optional(),
  response_reactor_id: uuid.optional(),
  request_transforms: z.array(z.object({ type: z.literal('code'), code: z.string() })),
  response_transforms: z.array(z.object({ type: z.literal('code'), code: z.string() })),
  application_id: uuid.optional(),
  configuration: z.record(z.string(), z.string()),
  require_auth: z.boolean(),
  timeout: z.number().optional(),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type ProxyResponse = z.output<typeof proxySchema>;
