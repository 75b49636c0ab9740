import { conflict, forbidden, notFound } from '@tokenvault/platform';
import type { Decider, DomainEvent } from '@tokenvault/cqrs';
import type { TokenType } from '@tokenvault/contracts';
import { allowedOnAll, type Grants } from './access.ts';

/** A token as decided. Its data stays sealed: only the query side opens it, for a reader. */
export interface TokenView {
  id: string;
  tenant_id: string;
  type: TokenType;
  data_ciphertext: string;
  containers: string[];
  metadata: Record<string, string>;
  fingerprint: string;
  expires_at?: string;
  created_by: string;
  created_at: string;
}

export type TokenEvent =
  | DomainEvent<
      'TokenCreated',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        /** AES-256-GCM under the tenant's data key, bound to tenant and token id. */
        data_ciphertext: string;
        containers: string[];
        metadata: Record<string, string>;
        fingerprint: string;
        expires_at?: string;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'TokenDeleted',
      { token_id: string; tenant_id: string; type: TokenType; deleted_by: string; deleted_at: string }
    >;

/**
 * A read of a token's data, appended before the data is returned: the audit log and the monthly
 * active tokens count it. Not part of the token's own stream (reads must not contend with writes).
 */
export type TokenReadEvent = DomainEvent<
  'TokenRead',
  { token_id: string; tenant_id: string; type: TokenType; read_by: string; read_at: string }
>;

/** Every event this context appends. */
export type TokensContextEvent = TokenEvent | TokenReadEvent;

export type TokenState = { status: 'absent' } | { status: 'live'; token: TokenView } | { status: 'deleted' };

export type TokenCommand =
  | { type: 'CreateToken'; token: TokenView }
  | { type: 'DeleteToken'; tokenId: string; tenantId: string; grants: Grants; actorId: string; now: string };

export const tokenStream = (tenantId: string, tokenId: string) => `tokens.token-${tenantId}-${tokenId}`;

export const tokenDecider: Decider<TokenState, TokenCommand, TokenEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(_state, event) {
    switch (event.type) {
      case 'TokenCreated': {
        const { token_id, ...rest } = event.data;
        return { status: 'live', token: { id: token_id, ...rest } };
      }
      case 'TokenDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateToken': {
        // Ids are never reused, not even after a delete: a token id names one value forever.
        if (state.status !== 'absent') throw conflict('A token with this id exists.');
        const { id, ...rest } = command.token;
        return [{ type: 'TokenCreated', data: { token_id: id, ...rest } }];
      }
      case 'DeleteToken': {
        if (state.status !== 'live') throw notFound('No token with this id.');
        if (!allowedOnAll(command.grants, 'token:delete', state.token.containers)) {
          throw forbidden('This API key lacks token:delete on the token’s containers.');
        }
        return [
          {
            type: 'TokenDeleted',
            data: {
              token_id: command.tokenId,
              tenant_id: command.tenantId,
              type: state.token.type,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
      }
    }
  },
};

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const tokenEventTypes = Object.keys({
  TokenCreated: true,
  TokenDeleted: true,
  TokenRead: true,
} satisfies Record<TokensContextEvent['type'], true>) as TokensContextEvent['type'][];

export const tokenReadsStream = (tenantId: string) => `tokens.reads-${tenantId}`;
