import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  type CommandHandler,
  type CommandOutcome,
} from '@tokenvault/cqrs';
import type { CreateWebhookBody, UpdateWebhookBody } from '@tokenvault/contracts';
import {
  resolveDestination,
  systemResolver,
  type AddressAllowlist,
  type Resolver,
} from '@tokenvault/destinations';
import type { EventStore } from '@tokenvault/eventstore';
import { badRequest, notAllowed, type Clock, type Principal } from '@tokenvault/platform';
import { subscriptionNotHeld } from '../domain/subscription-grant.ts';
import {
  webhookDecider,
  webhookMissing,
  type WebhookCommand,
  type WebhookSettings,
  type WebhookState,
  type WebhookView,
} from '../domain/webhook.ts';
import { streams, type WebhookLifecycleEvent } from '../domain/webhooks.events.ts';
import type { WebhookRow } from '../queries/webhooks.queries.ts';

export interface WebhookCommandDeps {
  store: EventStore;
  clock: Clock;
  /** Admits internal receivers (WEBHOOK_ALLOWED_PRIVATE_ADDRESSES). */
  webhookAllowlist: AddressAllowlist;
  /** How receiver names are resolved (tests give their own). */
  resolver?: Resolver;
}

const urlField = 'body.url';

/** The read model's shape of a decided webhook: one way to answer it. */
export const webhookRowOf = (webhook: WebhookView): WebhookRow => ({
  id: webhook.id,
  tenant_id: webhook.tenant_id,
  name: webhook.name,
  url: webhook.url,
  events: webhook.events,
  notify_email: webhook.notify_email ?? null,
  status: webhook.status,
  created_by: webhook.created_by,
  created_at: new Date(webhook.created_at),
  modified_by: webhook.modified_by ?? null,
  modified_at: webhook.modified_at ? new Date(webhook.modified_at) : null,
});

export class WebhookCommands {
  private readonly deps: WebhookCommandDeps;
  private readonly handle: CommandHandler<WebhookState, WebhookCommand, WebhookLifecycleEvent>;

  constructor(deps: WebhookCommandDeps) {
    this.deps = deps;
    this.handle = commandHandler(deps.store, webhookDecider, (command) =>
      streams.webhook(command.tenantId, command.webhookId),
    );
  }

  /** The destination rules, before anything is decided: https to public addresses (or allow-listed). */
  private async checkUrl(url: string): Promise<void> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw badRequest('The webhook URL is not a URL.', { [urlField]: ['Must be an absolute https URL'] });
    }
    if (parsed.hash)
      throw badRequest('The webhook URL is not allowed.', { [urlField]: ['Must not have a fragment'] });
    await resolveDestination(
      parsed,
      { allowlist: this.deps.webhookAllowlist, resolver: this.deps.resolver ?? systemResolver },
      urlField,
    );
  }

  private decided(outcome: CommandOutcome<WebhookState, WebhookLifecycleEvent>) {
    if (outcome.state.status !== 'active') throw new Error('the webhook is not active after the command');
    return { row: webhookRowOf(outcome.state.webhook), position: outcome.position };
  }

  async create(principal: Principal, body: CreateWebhookBody, correlationId: string) {
    assertMaySubscribe(principal, body.events);
    await this.checkUrl(body.url);
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      { type: 'CreateWebhook', webhookId: randomUUID(), settings: settingsOf(body, body.status), ...acting },
      metadata,
      { newStream: true },
    );
    return this.decided(outcome);
  }

  /** Replaces the settings; `status` stays as it is unless the body names it. */
  async update(principal: Principal, webhookId: string, body: UpdateWebhookBody, correlationId: string) {
    const current = await this.current(principal.tenantId, webhookId);
    // A new URL receives every event subscribed; otherwise only the events added are new grants.
    const urlChanged = body.url !== current.url;
    const added = body.events.filter((event) => !current.events.includes(event));
    if (urlChanged || added.length > 0) assertMaySubscribe(principal, urlChanged ? body.events : added);
    await this.checkUrl(body.url);
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      {
        type: 'UpdateWebhook',
        webhookId,
        settings: settingsOf(body, body.status ?? current.status),
        ...acting,
      },
      metadata,
    );
    return this.decided(outcome);
  }

  async delete(principal: Principal, webhookId: string, correlationId: string) {
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle({ type: 'DeleteWebhook', webhookId, ...acting }, metadata);
    return { position: outcome.position };
  }

  /** Its deliveries' verdict (the system acts): nothing when it is gone or disabled already. */
  async disable(tenantId: string, webhookId: string, reason: 'gone' | 'failing'): Promise<boolean> {
    const outcome = await this.handle(
      { type: 'DisableWebhook', tenantId, webhookId, reason, now: this.deps.clock.now().toISOString() },
      { tenant_id: tenantId, actor_type: 'system' },
    );
    return outcome.events.length > 0;
  }

  /** A 404 before any URL is resolved, for a webhook that is not there. */
  private async current(tenantId: string, webhookId: string): Promise<WebhookView> {
    const { state } = await aggregateStream(
      this.deps.store,
      streams.webhook(tenantId, webhookId),
      webhookDecider,
    );
    if (state.status !== 'active') throw webhookMissing();
    return state.webhook;
  }
}

const settingsOf = (
  body: CreateWebhookBody | UpdateWebhookBody,
  status: WebhookSettings['status'],
): WebhookSettings => ({
  name: body.name,
  url: body.url,
  events: body.events,
  ...(body.notify_email === undefined ? {} : { notify_email: body.notify_email }),
  status,
});

/**
 * A webhook delivers its events after the key that made it is gone: subscribing needs what reads
 * each event's resource tenant-wide, and a key without an expiry (subscriptionNotHeld; a 403
 * naming body.events or body.url, before anything is checked or written).
 */
function assertMaySubscribe(principal: Principal, events: readonly string[]) {
  const notHeld = subscriptionNotHeld(principal, events);
  if (notHeld) {
    throw notAllowed(
      'A webhook delivers every event of its types to its URL, and outlives the key that made it: only a key that reads each event type’s resource tenant-wide, without an expiry, may subscribe to it.',
      notHeld,
    );
  }
}
