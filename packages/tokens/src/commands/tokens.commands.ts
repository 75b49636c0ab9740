import type { EventStore, Position } from '@tokenvault/eventstore';
import type { Clock, Principal } from '@tokenvault/platform';
import type { CreateTokenBody, TokenResponse, UpdateTokenBody } from '@tokenvault/contracts';
import { associateParent, dissociateParent } from './associate-tokens.ts';
import { createTokenFromIntent, type TokenFromIntentFields } from './convert-token-intent.ts';
import { createToken, type CreateTokenResult } from './create-token.ts';
import { deleteToken } from './delete-token.ts';
import type { TokenCommandDeps, TokenCommandsVault } from './token-command-kit.ts';
import { tokenCommandHandler } from './token-handler.ts';
import { tokenizeTokens, type TokenizeResult, type TokenRequestAt } from './tokenize-tokens.ts';
import { updateToken } from './update-token.ts';

/** PCI DSS keeps a CVC only until authorisation: an hour, as Basis Theory (CARD_CVC_TTL_SECONDS). */
const defaultCardCvcTtlSeconds = 3600;

/**
 * The token commands, as the routes use them: one object built once with its collaborators. Each
 * command is a module of its own (create-token.ts, update-token.ts, delete-token.ts,
 * associate-tokens.ts).
 */
export class TokenCommands {
  private readonly deps: TokenCommandDeps;
  constructor(
    store: EventStore,
    vault: TokenCommandsVault,
    queries: TokenCommandDeps['queries'],
    clock: Clock,
    options: { cardCvcTtlSeconds?: number } = {},
  ) {
    this.deps = {
      store,
      vault,
      queries,
      clock,
      cardCvcTtlSeconds: options.cardCvcTtlSeconds ?? defaultCardCvcTtlSeconds,
      handle: tokenCommandHandler(store),
    };
  }

  /** How long a card keeps its CVC (CARD_CVC_TTL_SECONDS): token intents keep it no longer. */
  get cardCvcTtlSeconds(): number {
    return this.deps.cardCvcTtlSeconds;
  }

  /** With a parent, the token and its association to the parent are one event. */
  create(
    principal: Principal,
    body: CreateTokenBody,
    correlationId: string,
    parentId?: string,
  ): Promise<CreateTokenResult> {
    return createToken(this.deps, principal, body, correlationId, parentId);
  }

  /** A token of a token intent's type and data, consuming the intent (createTokenFromIntent). */
  createFromIntent(
    principal: Principal,
    intentId: string,
    fields: TokenFromIntentFields,
    correlationId: string,
  ): Promise<{ token: TokenResponse; position: Position | null }> {
    return createTokenFromIntent(this.deps, principal, intentId, fields, correlationId);
  }

  /** Many tokens in one append: all of them or none (tokenizeTokens). */
  tokenize(
    principal: Principal,
    requests: readonly TokenRequestAt[],
    correlationId: string,
  ): Promise<TokenizeResult> {
    return tokenizeTokens(this.deps, principal, requests, correlationId);
  }

  /** A merge patch of a live token (updateToken). */
  update(
    principal: Principal,
    tokenId: string,
    body: UpdateTokenBody,
    correlationId: string,
  ): Promise<{ token: TokenResponse; position: Position | null }> {
    return updateToken(this.deps, principal, tokenId, body, correlationId);
  }

  delete(
    principal: Principal,
    tokenId: string,
    correlationId: string,
  ): Promise<{ position: Position | null }> {
    return deleteToken(this.deps, principal, tokenId, correlationId);
  }

  /** Idempotent: an association already there is a success with no new event. */
  associate(
    principal: Principal,
    parentId: string,
    childId: string,
    correlationId: string,
  ): Promise<{ position: Position | null }> {
    return associateParent(this.deps, principal, parentId, childId, correlationId);
  }

  dissociate(
    principal: Principal,
    parentId: string,
    childId: string,
    correlationId: string,
  ): Promise<{ position: Position | null }> {
    return dissociateParent(this.deps, principal, parentId, childId, correlationId);
  }
}
