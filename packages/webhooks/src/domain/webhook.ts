import type { DataOf, Decider } from '@tokenvault/cqrs';
import { alreadyExists, notFoundError } from '@tokenvault/platform';
import type { WebhookLifecycleEvent } from './webhooks.events.ts';

/** A webhook as decided: the created fact and its last update. */
export type WebhookView = Omit<DataOf<WebhookLifecycleEvent, 'WebhookCreated'>, 'webhook_id'> & {
  id: string;
  modified_by?: string;
  modified_at?: string;
};

export type WebhookState =
  { status: 'absent' } | { status: 'active'; webhook: WebhookView } | { status: 'deleted' };

/** A webhook's settings as the caller asked for them (the URL already checked by the handler). */
export interface WebhookSettings {
  name: string;
  url: string;
  events: string[];
  notify_email?: string;
  status: 'enabled' | 'disabled';
}

interface Target {
  webhookId: string;
  tenantId: string;
  actorId: string;
  now: string;
}

export type WebhookCommand =
  | ({ type: 'CreateWebhook'; settings: WebhookSettings } & Target)
  | ({ type: 'UpdateWebhook'; settings: WebhookSettings } & Target)
  | ({ type: 'DeleteWebhook' } & Target)
  | { type: 'DisableWebhook'; webhookId: string; tenantId: string; reason: 'gone' | 'failing'; now: string };

export const webhookMissing = () => notFoundError('No webhook with this id.');

const settingsData = (command: Target & { settings: WebhookSettings }) => ({
  webhook_id: command.webhookId,
  tenant_id: command.tenantId,
  name: command.settings.name,
  url: command.settings.url,
  events: command.settings.events,
  ...(command.settings.notify_email === undefined ? {} : { notify_email: command.settings.notify_email }),
  status: command.settings.status,
});

export const webhookDecider: Decider<WebhookState, WebhookCommand, WebhookLifecycleEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'WebhookCreated': {
        const { webhook_id, ...rest } = event.data;
        return { status: 'active', webhook: { id: webhook_id, ...rest } };
      }
      case 'WebhookUpdated': {
        if (state.status !== 'active') return state;
        const { webhook_id: _id, notify_email, ...rest } = event.data;
        const { id, created_by, created_at } = state.webhook;
        return {
          status: 'active',
          webhook: {
            id,
            created_by,
            created_at,
            ...rest,
            ...(notify_email === undefined ? {} : { notify_email }),
          },
        };
      }
      case 'WebhookDeleted':
        return { status: 'deleted' };
      case 'WebhookDisabled':
        if (state.status !== 'active') return state;
        return { status: 'active', webhook: { ...state.webhook, status: 'disabled' } };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateWebhook':
        if (state.status !== 'absent') throw alreadyExists('A webhook with this id exists.');
        return [
          {
            type: 'WebhookCreated',
            data: { ...settingsData(command), created_by: command.actorId, created_at: command.now },
          },
        ];
      case 'UpdateWebhook':
        if (state.status !== 'active') throw webhookMissing();
        return [
          {
            type: 'WebhookUpdated',
            data: { ...settingsData(command), modified_by: command.actorId, modified_at: command.now },
          },
        ];
      case 'DisableWebhook':
        // Its deliveries' verdict: nothing to do when it is gone or already disabled.
        if (state.status !== 'active' || state.webhook.status === 'disabled') return [];
        return [
          {
            type: 'WebhookDisabled',
            data: {
              webhook_id: command.webhookId,
              tenant_id: command.tenantId,
              reason: command.reason,
              disabled_at: command.now,
            },
          },
        ];
      case 'DeleteWebhook':
        if (state.status !== 'active') throw webhookMissing();
        return [
          {
            type: 'WebhookDeleted',
            data: {
              webhook_id: command.webhookId,
              tenant_id: command.tenantId,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
    }
  },
};
