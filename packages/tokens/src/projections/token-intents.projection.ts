import { onTenantDeleted, type EventOf, type Projection, type TenantDeletedEvent } from '@tokenvault/cqrs';
import type { TokenIntentEvent } from '../domain/tokens.events.ts';

type Handled = EventOf<TokenIntentEvent, TokenIntentEvent['type']> | TenantDeletedEvent;

const tables = ['token_intents'] as const;
const tenantDeleted = onTenantDeleted(tables);

/**
 * The intents held now, with their expiry: what the expiry sweep reads (across tenants, as the
 * owner role). A row goes with its intent's conversion, deletion or expiry. No data, no
 * ciphertext: a read of an intent folds its own stream (TokenIntentCommands.get).
 */
export const tokenIntentsProjection: Projection<Handled> = {
  name: 'token-intents',
  tables,
  handles: [
    'TokenIntentCreated',
    'TokenIntentConverted',
    'TokenIntentDeleted',
    'TokenIntentExpired',
    'TenantDeleted',
  ],
  async apply(events, tx) {
    for (const event of events) {
      switch (event.type) {
        case 'TokenIntentCreated':
          await tx.query(
            `INSERT INTO token_intents (tenant_id, intent_id, type, expires_at, created_at)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
            [
              event.data.tenant_id,
              event.data.intent_id,
              event.data.type,
              event.data.expires_at,
              event.data.created_at,
            ],
          );
          break;
        case 'TokenIntentConverted':
        case 'TokenIntentDeleted':
        case 'TokenIntentExpired':
          await tx.query('DELETE FROM token_intents WHERE tenant_id = $1 AND intent_id = $2', [
            event.data.tenant_id,
            event.data.intent_id,
          ]);
          break;
        case 'TenantDeleted':
          await tenantDeleted(tx, [event.data]);
          break;
      }
    }
  },
};
