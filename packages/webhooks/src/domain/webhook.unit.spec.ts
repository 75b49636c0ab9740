import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { fold } from '@tokenvault/cqrs';
import { domainErrorWith } from '@tokenvault/platform/testing';
import { webhookDecider, type WebhookCommand } from './webhook.ts';
import type { WebhooksEvent } from './webhooks.events.ts';

const tenantId = '5b1f0a1e-0000-4000-8000-000000000001';
const actorId = '5b1f0a1e-0000-4000-8000-000000000002';
const webhookId = '5b1f0a1e-0000-4000-8000-000000000003';
const now = '2026-03-01T00:00:00.000Z';
const target = { webhookId, tenantId, actorId, now };
const settings = {
  name: 'Orders',
  url: 'https://hooks.example.com/in',
  events: ['token:created'],
  notify_email: 'ops@example.com',
  status: 'enabled' as const,
};

const create: WebhookCommand = { type: 'CreateWebhook', settings, ...target };
const created: WebhooksEvent = {
  type: 'WebhookCreated',
  data: {
    webhook_id: webhookId,
    tenant_id: tenantId,
    ...settings,
    created_by: actorId,
    created_at: now,
  },
};
const disable: WebhookCommand = {
  type: 'UpdateWebhook',
  settings: { name: 'Orders', url: settings.url, events: ['token:deleted'], status: 'disabled' },
  ...target,
};
const disabled: WebhooksEvent = {
  type: 'WebhookUpdated',
  data: {
    webhook_id: webhookId,
    tenant_id: tenantId,
    name: 'Orders',
    url: settings.url,
    events: ['token:deleted'],
    status: 'disabled',
    modified_by: actorId,
    modified_at: now,
  },
};
const deleted: WebhooksEvent = {
  type: 'WebhookDeleted',
  data: { webhook_id: webhookId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
};
const spec = deciderSpec(webhookDecider);

describe('webhook decider', () => {
  it('creates once', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(domainErrorWith('already-exists'));
  });

  it('updates an active webhook only; an update replaces the settings and drops a notify_email it leaves out', () => {
    spec.given([created]).when(disable).then([disabled]);
    spec.given([]).when(disable).thenThrows(domainErrorWith('not-found'));
    spec.given([created, deleted]).when(disable).thenThrows(domainErrorWith('not-found'));
    const state = fold(webhookDecider, [created, disabled]);
    expect(state).toEqual({
      status: 'active',
      webhook: {
        id: webhookId,
        tenant_id: tenantId,
        name: 'Orders',
        url: settings.url,
        events: ['token:deleted'],
        status: 'disabled',
        created_by: actorId,
        created_at: now,
        modified_by: actorId,
        modified_at: now,
      },
    });
  });

  it('deletes once', () => {
    spec
      .given([created])
      .when({ type: 'DeleteWebhook', ...target })
      .then([deleted]);
    spec
      .given([created, deleted])
      .when({ type: 'DeleteWebhook', ...target })
      .thenThrows(domainErrorWith('not-found'));
  });
});

describe('webhook decider: disabled by its deliveries', () => {
  const disableGone: WebhookCommand = { type: 'DisableWebhook', webhookId, tenantId, reason: 'gone', now };
  const disabledGone: WebhooksEvent = {
    type: 'WebhookDisabled',
    data: { webhook_id: webhookId, tenant_id: tenantId, reason: 'gone', disabled_at: now },
  };

  it('disables an enabled webhook once; nothing for a disabled, deleted or absent one', () => {
    spec.given([created]).when(disableGone).then([disabledGone]);
    expect(fold(webhookDecider, [created, disabledGone])).toMatchObject({
      status: 'active',
      webhook: { status: 'disabled', url: settings.url },
    });
    spec.given([created, disabledGone]).when(disableGone).then([]);
    spec.given([created, disabled]).when(disableGone).then([]);
    spec.given([created, deleted]).when(disableGone).then([]);
    spec.given([]).when(disableGone).then([]);
  });
});
