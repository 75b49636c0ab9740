import { notifyInvalidation, type EventOf } from '@tokenvault/cqrs';
import {
  independentRowsStatement,
  type AppendHook,
  type AppendSideData,
  type InlineProjection,
} from '@tokenvault/eventstore';
import type { PoolClient } from '@tokenvault/platform';
import {
  destroyTokenKey,
  setTokenKeyExpiry,
  storeNewTokenKey,
  storeTokenKey,
  storeTokenKeysStatement,
  tokenKeyInvalidation,
  tokenKeyRows,
  withdrawTokenKey,
  type SealedToken,
  type StoredTokenKey,
} from '@tokenvault/vault';
import { intentKeySubject } from '../domain/token-intent.ts';
import type { TokenEvent, TokenIntentEvent } from '../domain/tokens.events.ts';

type Handled =
  | EventOf<
      TokenEvent,
      'TokenCreated' | 'TokenUpdated' | 'TokenReencrypted' | 'TokenCvcRemoved' | 'TokenDeleted'
    >
  | TokenIntentEvent;

/** The intent events after which its key is gone: converted, deleted, expired. */
const intentEnds = ['TokenIntentConverted', 'TokenIntentDeleted', 'TokenIntentExpired'] as const;
type IntentEnd = EventOf<TokenIntentEvent, (typeof intentEnds)[number]>;
const isIntentEnd = (event: Handled): event is IntentEnd =>
  (intentEnds as readonly string[]).includes(event.type);

/** Destroys an intent's key, and every process forgets it at the commit. */
async function destroyIntentKey(tx: PoolClient, tenantId: string, intentId: string) {
  await destroyTokenKey(tx, tenantId, intentKeySubject(intentId));
  await notifyInvalidation(tx, tokenKeyInvalidation(tenantId, intentKeySubject(intentId)));
}

/** A new token key as the append's side data carries it: its row, and the ciphertext it sealed. */
interface NewTokenKeyRow extends StoredTokenKey {
  sealed: string;
}

/** Where in an append's side data the new token keys are. */
const sideDataField = 'tokenKeys';

/**
 * The side data of an append whose events carry these ciphertexts: the new keys among them (the
 * rows only: the unwrapped keys stay with the caller), for the steps below to store. Undefined when
 * none was sealed under a new key.
 */
export function tokenKeysSideData(sealed: readonly (SealedToken | undefined)[]): AppendSideData | undefined {
  const rows = sealed.flatMap((token): NewTokenKeyRow[] => {
    if (!token?.newKey) return [];
    const { unwrappedKey: _kept, ...row } = token.newKey;
    return [row];
  });
  return rows.length ? { [sideDataField]: rows } : undefined;
}

/** The new key the append carries for this ciphertext, if any. */
function newKeyOf(sideData: AppendSideData | undefined, ciphertext: string): StoredTokenKey | undefined {
  const rows = sideData?.[sideDataField] as readonly NewTokenKeyRow[] | undefined;
  const row = rows?.find((candidate) => candidate.sealed === ciphertext);
  if (!row) return undefined;
  const { sealed: _sealed, ...key } = row;
  return key;
}

/**
 * Token keys as part of the write (PostgreSQL event store): the transaction that appends a token's
 * event stores the key its new ciphertext was sealed with (made for this append, and carried by
 * it as side data: tokenKeysSideData), keeps the key's expiry in step with the token's, and destroys the key
 * with TokenDeleted; every process forgets the unwrapped key at that commit. Not a read model (a
 * rebuild has nothing to redo, and never needs a key). With an external event store the same
 * steps run before (store) and after (destroy) the append: see @tokenvault/vault's token-keys.ts.
 */
export const tokenKeyStore: InlineProjection<Handled> = {
  handles: [
    'TokenCreated',
    'TokenUpdated',
    'TokenReencrypted',
    'TokenCvcRemoved',
    'TokenDeleted',
    'TokenIntentCreated',
    ...intentEnds,
  ],
  async apply(events, tx, context) {
    for (const event of events) {
      switch (event.type) {
        case 'TokenIntentCreated': {
          // The intent's key goes when the intent expires, whatever the intent sweep does.
          const pending = newKeyOf(context?.sideData, event.data.data_ciphertext);
          if (pending) await storeTokenKey(tx, { ...pending, expiresAt: event.data.expires_at });
          else if (event.data.data_ciphertext.startsWith('tk:')) {
            throw new Error('the key of this token intent is not carried by its append');
          }
          break;
        }
        case 'TokenIntentConverted':
        case 'TokenIntentDeleted':
        case 'TokenIntentExpired':
          await destroyIntentKey(tx, event.data.tenant_id, event.data.intent_id);
          break;
        case 'TokenCvcRemoved': {
          // Sealed under a new key, which replaces (destroys) the one that sealed the CVC; or,
          // where the key could not be replaced, under the token's key (removeCardCvc).
          const pending = newKeyOf(context?.sideData, event.data.data_ciphertext);
          if (pending) {
            await storeTokenKey(tx, pending);
            await notifyInvalidation(tx, tokenKeyInvalidation(event.data.tenant_id, event.data.token_id));
          }
          break;
        }
        case 'TokenCreated':
        case 'TokenUpdated':
        case 'TokenReencrypted': {
          const pending = newKeyOf(context?.sideData, event.data.data_ciphertext);
          const expiresAt = event.type === 'TokenReencrypted' ? undefined : (event.data.expires_at ?? null);
          if (pending && event.type === 'TokenCreated') {
            // A new token's key, its own row: group commit may send it once for a batch's creates.
            const rows = tokenKeyRows([{ ...pending, expiresAt: expiresAt ?? null }]);
            await tx.query(
              independentRowsStatement(storeTokenKeysStatement.name, storeTokenKeysStatement.text, rows),
            );
          } else if (pending) {
            await storeTokenKey(tx, expiresAt === undefined ? pending : { ...pending, expiresAt });
            if (event.type === 'TokenReencrypted') {
              await notifyInvalidation(tx, tokenKeyInvalidation(event.data.tenant_id, event.data.token_id));
            }
          } else if (event.type === 'TokenUpdated') {
            await setTokenKeyExpiry(tx, event.data.tenant_id, event.data.token_id, expiresAt ?? null);
          } else if (event.data.data_ciphertext.startsWith('tk:')) {
            // Committing a ciphertext whose key was never stored would lose the data.
            throw new Error('the key of this token ciphertext is not carried by its append');
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
export const externalTokenKeyHook: AppendHook<Handled> = {
  handles: tokenKeyStore.handles,
  async before(events, tx, context) {
    for (const event of events) {
      if (event.type === 'TokenIntentCreated') {
        const pending = newKeyOf(context.sideData, event.data.data_ciphertext);
        if (!pending) {
          if (event.data.data_ciphertext.startsWith('tk:')) {
            throw new Error('the key of this token intent is not carried by its append');
          }
          continue;
        }
        if (!(await storeNewTokenKey(tx, { ...pending, expiresAt: event.data.expires_at }))) {
          throw new Error('the token intent already has a key (a concurrent writer): try again');
        }
        continue;
      }
      if (isIntentEnd(event)) continue;
      if (event.type === 'TokenReencrypted') {
        throw new Error('re-encrypting a token needs the events in PostgreSQL (EVENTSTORE_URL unset)');
      }
      if (event.type === 'TokenCvcRemoved') {
        // Its key cannot be replaced here (see above): the CVC's removal seals under the token's key.
        if (newKeyOf(context.sideData, event.data.data_ciphertext)) {
          throw new Error('replacing a token key needs the events in PostgreSQL (EVENTSTORE_URL unset)');
        }
        continue;
      }
      if (event.type === 'TokenDeleted') continue;
      const pending = newKeyOf(context.sideData, event.data.data_ciphertext);
      if (!pending) {
        if (event.type === 'TokenCreated' && event.data.data_ciphertext.startsWith('tk:')) {
          throw new Error('the key of this token ciphertext is not carried by its append');
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
    for (const event of events) {
      if (event.type === 'TokenUpdated') {
        await setTokenKeyExpiry(tx, event.data.tenant_id, event.data.token_id, event.data.expires_at ?? null);
      } else if (event.type === 'TokenDeleted') {
        await destroyTokenKey(tx, event.data.tenant_id, event.data.token_id);
        await notifyInvalidation(tx, tokenKeyInvalidation(event.data.tenant_id, event.data.token_id));
      } else if (isIntentEnd(event)) {
        await destroyIntentKey(tx, event.data.tenant_id, event.data.intent_id);
      }
    }
  },
  async failed(events, tx, context) {
    for (const event of events) {
      if (
        event.type !== 'TokenCreated' &&
        event.type !== 'TokenUpdated' &&
        event.type !== 'TokenIntentCreated'
      )
        continue;
      // Known only to the append that carried it; a repair (another process, or after a crash)
      // has the events alone, and the orphan sweep takes the key.
      const pending = newKeyOf(context.sideData, event.data.data_ciphertext);
      if (pending) await withdrawTokenKey(tx, pending);
    }
  },
};
