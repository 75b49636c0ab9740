import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import {
  defineRoute,
  notFound,
  pageQuery,
  paginated,
  type Clock,
  type RouteDefinition,
} from '@tokenvault/platform';
import {
  createWebhookBody,
  idParams,
  paginatedSchema,
  updateWebhookBody,
  webhookDeliverySchema,
  webhookEventTypes,
  webhookPingEventType,
  webhookPingSchema,
  webhookSchema,
  webhookSigningKeySchema,
} from '@tokenvault/contracts';
import type { SigningKeyCommands } from '../commands/signing-key.commands.ts';
import type { WebhookCommands } from '../commands/webhooks.commands.ts';
import { webhookDeliveryId, type WebhookDeliveryJob } from '../deliveries/delivery-job.ts';
import { webhookMissing } from '../domain/webhook.ts';
import { webhookResponse, type WebhookQueries } from '../queries/webhooks.queries.ts';

/** What the webhook routes use, built by the webhooks manifest's `routes(deps)` (context.ts). */
export interface WebhookRouteDeps {
  commands: Pick<WebhookCommands, 'create' | 'update' | 'delete'>;
  queries: Pick<WebhookQueries, 'list' | 'get' | 'deliveries'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
  signingKeys: Pick<SigningKeyCommands, 'ensure' | 'current' | 'rotate'>;
  /** Queues deliveries for the webhook worker (pings). */
  enqueueWebhookDeliveries: (deliveries: WebhookDeliveryJob[]) => Promise<void>;
  /** Sends one delivery again (false: the queue no longer holds it, or it is not this webhook's). */
  redeliverWebhookDelivery: (tenantId: string, webhookId: string, deliveryId: string) => Promise<boolean>;
  clock: Clock;
}

export function webhookRoutes({
  commands,
  queries,
  consistency,
  signingKeys,
  enqueueWebhookDeliveries,
  redeliverWebhookDelivery,
  clock,
}: WebhookRouteDeps): RouteDefinition[] {
  const tag = 'Webhooks';
  const written = async (status: 200 | 201, outcome: Awaited<ReturnType<WebhookCommands['create']>>) => ({
    status,
    headers: await consistency.afterWrite(outcome.position),
    body: webhookResponse(outcome.row),
  });
  return [
    defineRoute({
      method: 'get',
      path: '/ping',
      operationId: 'getPing',
      summary: 'Answers 204: the webhooks API is reachable (what the anchor SDK’s webhooks.ping() calls)',
      tag,
      permission: null,
      returnsSensitive: [],
      responses: { 204: { description: 'Reachable' } },
      handle: () => Promise.resolve({ status: 204 }),
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks',
      operationId: 'createWebhook',
      summary:
        'Subscribe an https URL to event types (enabled unless status says otherwise); each event type needs its resource’s read permission tenant-wide (token:read for token:*), and a key that expires may not (403 naming body.events or body.url)',
      tag,
      permission: 'webhook:create',
      returnsSensitive: [],
      body: createWebhookBody,
      responses: { 201: { description: 'Created', schema: webhookSchema } },
      async handle({ principal, body, requestId }) {
        // The tenant's signing key first: no delivery goes out unsigned.
        await signingKeys.ensure(principal, requestId);
        return written(201, await commands.create(principal, body, requestId));
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks',
      operationId: 'listWebhooks',
      summary: 'List webhooks, oldest first',
      tag,
      permission: 'webhook:read',
      returnsSensitive: [],
      query: z.strictObject({ ...pageQuery(100) }),
      responses: { 200: { description: 'A page of webhooks', schema: paginatedSchema(webhookSchema) } },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(principal.tenantId, query.page, query.size);
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    // Before /webhooks/:id, which it would otherwise match.
    defineRoute({
      method: 'get',
      path: '/webhooks/event-types',
      operationId: 'listWebhookEventTypes',
      summary: 'The event types a webhook may subscribe to',
      tag,
      permission: 'webhook:read',
      returnsSensitive: [],
      responses: { 200: { description: 'The event types', schema: z.array(z.string()) } },
      handle: () => Promise.resolve({ status: 200, body: webhookEventTypes }),
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/signing-key',
      operationId: 'getWebhookSigningKey',
      summary:
        'The secret deliveries are signed with (made at the first call); receivers verify with it. It signs as the service: webhook:update, not webhook:read',
      tag,
      // Whoever holds the secret can forge deliveries the tenant's receivers accept: a key that
      // may only read webhooks must not get it (the anchor's surface has no such call to mirror).
      permission: 'webhook:update',
      returnsSensitive: ['signing-secret'],
      responses: { 200: { description: 'The signing key', schema: webhookSigningKeySchema } },
      async handle({ principal, requestId }) {
        return { status: 200, body: { key: await signingKeys.current(principal, requestId) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/signing-key/rotate',
      operationId: 'rotateWebhookSigningKey',
      summary:
        'A new signing key; the replaced one keeps signing beside it for WEBHOOK_SIGNING_KEY_OVERLAP_SECONDS (a day)',
      tag,
      permission: 'webhook:update',
      returnsSensitive: ['signing-secret'],
      responses: { 200: { description: 'The new signing key', schema: webhookSigningKeySchema } },
      async handle({ principal, requestId }) {
        return { status: 200, body: { key: await signingKeys.rotate(principal, requestId) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/:id/ping',
      operationId: 'pingWebhook',
      summary: 'Queue a signed test delivery (`webhook:ping`) to the webhook, even a disabled one',
      tag,
      permission: 'webhook:update',
      returnsSensitive: [],
      params: idParams,
      responses: { 202: { description: 'Queued', schema: webhookPingSchema } },
      async handle({ principal, params }) {
        const webhook = await queries.get(principal.tenantId, params.id);
        if (!webhook) throw webhookMissing();
        const eventId = `ping-${randomUUID()}`;
        const delivery: WebhookDeliveryJob = {
          delivery_id: webhookDeliveryId(webhook.id, eventId),
          tenant_id: webhook.tenant_id,
          webhook_id: webhook.id,
          event_id: eventId,
          type: webhookPingEventType,
          occurred_at: clock.now().toISOString(),
          data: {},
        };
        await enqueueWebhookDeliveries([delivery]);
        return { status: 202, body: { delivery_id: delivery.delivery_id } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/:id/deliveries',
      operationId: 'listWebhookDeliveries',
      summary:
        'A webhook’s deliveries, newest first: their outcomes, never their bodies (kept WEBHOOK_HISTORY_DAYS)',
      tag,
      permission: 'webhook:read',
      returnsSensitive: [],
      params: idParams,
      query: z.strictObject({ ...pageQuery(100) }),
      responses: {
        200: { description: 'A page of deliveries', schema: paginatedSchema(webhookDeliverySchema) },
      },
      async handle({ principal, params, query }) {
        if (!(await queries.get(principal.tenantId, params.id))) throw webhookMissing();
        const { items, total } = await queries.deliveries(
          principal.tenantId,
          params.id,
          query.page,
          query.size,
        );
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/:id/deliveries/:delivery_id/redeliver',
      operationId: 'redeliverWebhookDelivery',
      summary: 'Send one delivery again, under its delivery id (within a week of its last attempt)',
      tag,
      permission: 'webhook:update',
      returnsSensitive: [],
      params: z.strictObject({
        id: idParams.shape.id,
        delivery_id: z.string().min(1).max(200, 'At most 200 characters'),
      }),
      responses: { 202: { description: 'Queued', schema: webhookPingSchema } },
      async handle({ principal, params }) {
        if (!(await redeliverWebhookDelivery(principal.tenantId, params.id, params.delivery_id))) {
          throw notFound('No delivery with this id is held any more (deliveries are kept a week).');
        }
        return { status: 202, body: { delivery_id: params.delivery_id } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/webhooks/:id',
      operationId: 'getWebhook',
      summary: 'Get a webhook',
      tag,
      permission: 'webhook:read',
      returnsSensitive: [],
      params: idParams,
      responses: { 200: { description: 'The webhook', schema: webhookSchema } },
      async handle({ principal, params }) {
        const webhook = await queries.get(principal.tenantId, params.id);
        if (!webhook) throw webhookMissing();
        return { status: 200, body: webhook };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/webhooks/:id',
      operationId: 'updateWebhook',
      summary:
        'Replace a webhook’s settings (its status stays as it is unless named); a new URL or added event types need what creating does (403 naming body.events or body.url)',
      tag,
      permission: 'webhook:update',
      returnsSensitive: [],
      params: idParams,
      body: updateWebhookBody,
      responses: { 200: { description: 'The updated webhook', schema: webhookSchema } },
      async handle({ principal, params, body, requestId }) {
        return written(200, await commands.update(principal, params.id, body, requestId));
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/webhooks/:id',
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook (nothing more is delivered to it)',
      tag,
      permission: 'webhook:delete',
      returnsSensitive: [],
      params: idParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
