import { alreadyExists, conflictError, notFoundError } from '@tokenvault/platform';
import type { DataOf, Decider } from '@tokenvault/cqrs';
import { tokenIntentLifetimeMs, type TokenType } from '@tokenvault/contracts';
import { holdsCvc, withoutCvc } from './token-details.ts';
import type { TokenIntentEvent } from './tokens.events.ts';

/** A token intent as its creation recorded it (its id as `id`); its data stays sealed. */
export type TokenIntentView = Omit<DataOf<TokenIntentEvent, 'TokenIntentCreated'>, 'intent_id'> & {
  id: string;
};

export type TokenIntentState =
  | { status: 'absent' }
  | { status: 'held'; intent: TokenIntentView }
  /** Converted, deleted or expired: its key is gone, and so is it. */
  | { status: 'consumed'; by: 'converted' | 'deleted' | 'expired'; intent: TokenIntentView };

interface Acting {
  tenantId: string;
  intentId: string;
  actorId: string;
  now: string;
}

export type TokenIntentCommand =
  | { type: 'CreateTokenIntent'; intent: TokenIntentView }
  | ({ type: 'ConvertTokenIntent'; tokenId: string } & Acting)
  | ({ type: 'DeleteTokenIntent' } & Acting)
  /** The sweep's: expires an intent whose expiry has passed (nothing otherwise). */
  | { type: 'ExpireTokenIntent'; tenantId: string; intentId: string; now: string };

const missing = () => notFoundError('No token intent with this id.');

/** Held, and not past its expiry at `now`: what a read, a conversion or a deletion may act on. */
export function liveIntent(state: TokenIntentState, now: string): TokenIntentView | undefined {
  if (state.status !== 'held') return undefined;
  return Date.parse(state.intent.expires_at) <= Date.parse(now) ? undefined : state.intent;
}

export const tokenIntentDecider: Decider<TokenIntentState, TokenIntentCommand, TokenIntentEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'TokenIntentCreated': {
        const { intent_id, ...rest } = event.data;
        return { status: 'held', intent: { id: intent_id, ...rest } };
      }
      case 'TokenIntentConverted':
      case 'TokenIntentDeleted':
      case 'TokenIntentExpired': {
        if (state.status !== 'held') return state;
        const by =
          event.type === 'TokenIntentConverted'
            ? 'converted'
            : event.type === 'TokenIntentDeleted'
              ? 'deleted'
              : 'expired';
        return { status: 'consumed', by, intent: state.intent };
      }
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateTokenIntent': {
        if (state.status !== 'absent') throw alreadyExists('A token intent with this id exists.');
        const { id, ...intent } = command.intent;
        return [{ type: 'TokenIntentCreated', data: { intent_id: id, ...intent } }];
      }
      case 'ConvertTokenIntent': {
        // Made a token once: a second conversion (a replay, or a race lost) makes none.
        if (state.status === 'consumed' && state.by === 'converted') {
          throw conflictError('This token intent was already made a token.');
        }
        const intent = liveIntent(state, command.now);
        if (!intent) throw missing();
        return [
          {
            type: 'TokenIntentConverted',
            data: {
              intent_id: intent.id,
              tenant_id: intent.tenant_id,
              type: intent.type,
              token_id: command.tokenId,
              converted_by: command.actorId,
              converted_at: command.now,
            },
          },
        ];
      }
      case 'DeleteTokenIntent': {
        const intent = liveIntent(state, command.now);
        if (!intent) throw missing();
        return [
          {
            type: 'TokenIntentDeleted',
            data: {
              intent_id: intent.id,
              tenant_id: intent.tenant_id,
              type: intent.type,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
      }
      case 'ExpireTokenIntent': {
        if (state.status !== 'held' || liveIntent(state, command.now)) return [];
        const { intent } = state;
        return [
          {
            type: 'TokenIntentExpired',
            data: {
              intent_id: intent.id,
              tenant_id: intent.tenant_id,
              type: intent.type,
              expired_at: command.now,
            },
          },
        ];
      }
    }
  },
};

/**
 * Where an intent's key is kept: a row of `token_keys` under a name no token id can have (a token
 * id has no `/`), so that rotation, tenant deletion and the expiry sweep of keys cover it too.
 */
export const intentKeySubject = (intentId: string) => `token-intent/${intentId}`;

/** The intent whose key a `token_keys` row is, if it is one. */
export function intentOfKeySubject(subject: string): string | undefined {
  return subject.startsWith('token-intent/') ? subject.slice('token-intent/'.length) : undefined;
}

/**
 * When an intent created at `createdAt` expires: 24 hours later, or sooner when its data holds a
 * card's CVC: a CVC is kept CARD_CVC_TTL_SECONDS after it was given, and an intent's data goes as
 * a whole, so the intent goes with its CVC (`cvc_expires_at`, the same time).
 */
export function intentTimesOf(
  type: TokenType,
  data: unknown,
  createdAt: Date,
  cardCvcTtlSeconds: number,
): { expires_at: string; cvc_expires_at?: string } {
  const lifetimeEnds = createdAt.getTime() + tokenIntentLifetimeMs;
  if (!holdsCvc(type, data)) return { expires_at: new Date(lifetimeEnds).toISOString() };
  const cvcEnds = createdAt.getTime() + cardCvcTtlSeconds * 1000;
  return {
    expires_at: new Date(Math.min(lifetimeEnds, cvcEnds)).toISOString(),
    cvc_expires_at: new Date(cvcEnds).toISOString(),
  };
}

/**
 * The intent's data as a conversion at `now` hands it to the token, and when the token's CVC goes:
 * counted from when the intent got it (its creation), never from the conversion. An intent from
 * before intents kept to the CVC's time (no `cvc_expires_at`, up to 24 hours) whose CVC is past
 * that time hands its data without it.
 */
export function intentDataForToken(
  intent: TokenIntentView,
  data: unknown,
  cardCvcTtlSeconds: number,
  now: string,
): { data: unknown; cvcExpiresAt?: string } {
  if (!holdsCvc(intent.type, data)) return { data };
  const cvcExpiresAt =
    intent.cvc_expires_at ?? new Date(Date.parse(intent.created_at) + cardCvcTtlSeconds * 1000).toISOString();
  if (Date.parse(cvcExpiresAt) <= Date.parse(now)) return { data: withoutCvc(data) };
  return { data, cvcExpiresAt };
}
