import { notifyInvalidation } from '@tokenvault/cqrs';
import type { InlineProjection } from '@tokenvault/eventstore';
import {
  destroyTokenKey,
  pendingTokenKeys,
  setTokenKeyExpiry,
  storeTokenKey,
  tokenKeyInvalidation,
} from '@tokenvault/vault';
import type { TokenEvent } from '../domain/token.ts';

type Handled = Extract<
  TokenEvent,
  { type: 'TokenCreated' | 'TokenUpdated' | 'TokenReencrypted' | 'TokenDeleted' }
>;

/**
 * Token keys as part of the write (PostgreSQL event store): the transaction that appends a token's
 * event stores the key its new ciphertext was sealed with (made by this process for this append,
 * see pendingTokenKeys), keeps the key's expiry in step with the token's, and destroys the key
 * with TokenDeleted; every process forgets the unwrapped key at that commit. Not a read model (a
 * rebuild has nothing to redo, and never needs a key). With an external event store the same
 * steps run before (store) and after (destroy) the append: see @tokenvault/vault's token-keys.ts.
 */
export const tokenKeyStore: InlineProjection = {
  handles: ['TokenCreated', 'TokenUpdated', 'TokenReencrypted', 'TokenDeleted'] satisfies Handled['type'][],
  async apply(events, tx) {
    for (const event of events as readonly Handled[]) {
      switch (event.type) {
        case 'TokenCreated':
        case 'TokenUpdated':
        case 'TokenReencrypted': {
          const pending = pendingTokenKeys.get(event.data.data_ciphertext);
          const expiresAt = event.type === 'TokenReencrypted' ? undefined : (event.data.expires_at ?? null);
          if (pending) {
            await storeTokenKey(tx, expiresAt === undefined ? pending : { ...pending, expiresAt });
            if (event.type === 'TokenReencrypted') {
              await notifyInvalidation(tx, tokenKeyInvalidation(event.data.tenant_id, event.data.token_id));
            }
          } else if (event.type === 'TokenUpdated') {
            await setTokenKeyExpiry(tx, event.data.tenant_id, event.data.token_id, expiresAt ?? null);
          } else if (event.data.data_ciphertext.startsWith('tk:')) {
            // Committing a ciphertext whose key was never stored would lose the data.
            throw new Error('the key of this token ciphertext is not pending in this process');
          }
          break;
        }
        case 'TokenDeleted':
          await destroyTokenKey(tx, event.data.tenant_id, event.data.token_id);
          await notifyInvalidation(tx, tokenKeyInvalidation(event.data.tenant_id, event.data.token_id));
          break;
      }
    }
  },
};
