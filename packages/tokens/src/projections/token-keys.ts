import { notifyInvalidation } from '@tokenvault/cqrs';
import type { AppendHook, InlineProjection } from '@tokenvault/eventstore';
import {
  destroyTokenKey,
  pendingTokenKeys,
  setTokenKeyExpiry,
  storeNewTokenKey,
  storeTokenKey,
  tokenKeyInvalidation,
  withdrawTokenKey,
} from '@tokenvault/vault';
import type { TokenEvent } from '../domain/events.ts';

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

/**
 * The same steps around an external event store's append (EVENTSTORE_URL: no transaction shared
 * with the keys). A new key is stored BEFORE the append, never replacing a key the token has, so
 * no stored event can carry a ciphertext whose key was not kept; a refused append takes back only
 * that key; a deletion's destroy and an update's expiry follow the stored events (the repair runs
 * them too, from the events alone). A crash after the key was stored and before the append leaves
 * a key without a token, which sweepOrphanTokenKeys removes. A re-encryption replaces the token's
 * only key, which could not be taken back if its append were refused: it needs the events in
 * PostgreSQL, and is refused here before anything is written.
 */
export const externalTokenKeyHook: AppendHook = {
  handles: tokenKeyStore.handles,
  async before(events, tx) {
    for (const event of events as unknown as readonly Handled[]) {
      if (event.type === 'TokenReencrypted') {
        throw new Error('re-encrypting a token needs the events in PostgreSQL (EVENTSTORE_URL unset)');
      }
      if (event.type === 'TokenDeleted') continue;
      const pending = pendingTokenKeys.get(event.data.data_ciphertext);
      if (!pending) {
        if (event.type === 'TokenCreated' && event.data.data_ciphertext.startsWith('tk:')) {
          throw new Error('the key of this token ciphertext is not pending in this process');
        }
        continue;
      }
      // Refused, the append never happens: the key the token has stays its key.
      if (!(await storeNewTokenKey(tx, { ...pending, expiresAt: event.data.expires_at ?? null }))) {
        throw new Error('the token already has a key (a concurrent writer): try again');
      }
    }
  },
  async after(events, tx) {
    for (const event of events as unknown as readonly Handled[]) {
      if (event.type === 'TokenUpdated') {
        await setTokenKeyExpiry(tx, event.data.tenant_id, event.data.token_id, event.data.expires_at ?? null);
      } else if (event.type === 'TokenDeleted') {
        await destroyTokenKey(tx, event.data.tenant_id, event.data.token_id);
        await notifyInvalidation(tx, tokenKeyInvalidation(event.data.tenant_id, event.data.token_id));
      }
    }
  },
  async failed(events, tx) {
    for (const event of events as unknown as readonly Handled[]) {
      if (event.type !== 'TokenCreated' && event.type !== 'TokenUpdated') continue;
      // Known only in the process that sealed it; elsewhere (a repair) the orphan sweep takes it.
      const pending = pendingTokenKeys.get(event.data.data_ciphertext);
      if (pending) await withdrawTokenKey(tx, pending);
    }
  },
};
