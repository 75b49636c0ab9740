import { randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  metadataOf,
  type CommandHandler,
} from '@tokenvault/cqrs';
import type { EventStore, Position } from '@tokenvault/eventstore';
import { notFound, type Clock, type Principal } from '@tokenvault/platform';
import type { CreateTokenIntentBody, TokenIntentResponse } from '@tokenvault/contracts';
import {
  intentKeySubject,
  intentTimesOf,
  liveIntent,
  tokenIntentDecider,
  type TokenIntentCommand,
  type TokenIntentState,
  type TokenIntentView,
} from '../domain/token-intent.ts';
import { fingerprintSubjectOf, summariesShown, tokenSummariesOf } from '../domain/token-details.ts';
import { tokenIntentStream, type TokenIntentEvent } from '../domain/tokens.events.ts';
import { tokenKeysSideData } from '../projections/token-keys.projection.ts';
import type { TokenCommandsVault } from './token-command-kit.ts';

export interface TokenIntentCommandDeps {
  store: EventStore;
  vault: Pick<TokenCommandsVault, 'sealToken' | 'keepTokenKey' | 'fingerprint' | 'forgetToken'>;
  clock: Clock;
  /** How long a card keeps its CVC (CARD_CVC_TTL_SECONDS): an intent holding one lives no longer. */
  cardCvcTtlSeconds: number;
}

/** The token intent aggregate's command handler, bound to a store. */
export function tokenIntentCommandHandler(
  store: EventStore,
): CommandHandler<TokenIntentState, TokenIntentCommand, TokenIntentEvent> {
  return commandHandler(store, tokenIntentDecider, (command) =>
    tokenIntentStream(
      command.type === 'CreateTokenIntent' ? command.intent.tenant_id : command.tenantId,
      command.type === 'CreateTokenIntent' ? command.intent.id : command.intentId,
    ),
  );
}

/**
 * A token intent as the API shows it: never its data, nor its ciphertext. The answer of its
 * create (`'created'`) shows its creator the summaries and fingerprint of the data it sent; any
 * later read (`'held'`) shows what a token's masked read shows (summariesShown with `mask`: a
 * card's first six and last four, no fingerprint), whoever reads: no key may read an intent's
 * data, and a fingerprint or an 8-digit BIN beside the last four would answer a public key's
 * guess of it (docs/security.md, "Card summaries").
 */
export function tokenIntentResponseOf(
  intent: TokenIntentView,
  shown: 'created' | 'held',
): TokenIntentResponse {
  const fields: TokenIntentResponse = {
    id: intent.id,
    tenant_id: intent.tenant_id,
    type: intent.type,
    fingerprint: intent.fingerprint,
    created_by: intent.created_by,
    created_at: intent.created_at,
    expires_at: intent.expires_at,
    ...(intent.card ? { card: intent.card } : {}),
    ...(intent.bank ? { bank: intent.bank } : {}),
  };
  return shown === 'created' ? fields : summariesShown(fields, 'mask');
}

/**
 * Token intents (POST, GET and DELETE /token-intents): data checked as a token of its type would
 * be, sealed under a key of its own, held until it is made a token (TokenCommands.createFromIntent),
 * deleted or expired; each of those destroys the key in its append (token-keys.projection.ts).
 */
export class TokenIntentCommands {
  private readonly deps: TokenIntentCommandDeps;
  private readonly handle: CommandHandler<TokenIntentState, TokenIntentCommand, TokenIntentEvent>;

  constructor(deps: TokenIntentCommandDeps) {
    this.deps = deps;
    this.handle = tokenIntentCommandHandler(deps.store);
  }

  async create(
    principal: Principal,
    body: CreateTokenIntentBody,
    correlationId: string,
  ): Promise<{ intent: TokenIntentResponse; position: Position | null }> {
    const { vault, clock } = this.deps;
    const tenantId = principal.tenantId;
    const id = randomUUID();
    const createdAt = clock.now();
    const times = intentTimesOf(body.type, body.data, createdAt, this.deps.cardCvcTtlSeconds);
    const sealed = await vault.sealToken(tenantId, intentKeySubject(id), body.data, {
      expiresAt: times.expires_at,
    });
    const intent: TokenIntentView = {
      id,
      tenant_id: tenantId,
      type: body.type,
      data_ciphertext: sealed.ciphertext,
      fingerprint: await vault.fingerprint(tenantId, body.type, fingerprintSubjectOf(body.type, body.data)),
      ...tokenSummariesOf(body.type, body.data),
      ...times,
      created_by: principal.actorId,
      created_at: createdAt.toISOString(),
    };
    const outcome = await this.handle(
      { type: 'CreateTokenIntent', intent },
      metadataOf(principal, correlationId),
      { newStream: true, sideData: tokenKeysSideData([sealed]) },
    );
    if (sealed.newKey) vault.keepTokenKey(sealed.newKey);
    return { intent: tokenIntentResponseOf(intent, 'created'), position: outcome.position };
  }

  /** The caller's tenant's intent, held and not expired; otherwise a 404 (another tenant's too). */
  async get(principal: Principal, intentId: string): Promise<TokenIntentResponse> {
    const intent = await heldIntent(this.deps, principal.tenantId, intentId);
    if (!intent) throw notFoundIntent();
    return tokenIntentResponseOf(intent, 'held');
  }

  async delete(
    principal: Principal,
    intentId: string,
    correlationId: string,
  ): Promise<{ position: Position | null }> {
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle({ type: 'DeleteTokenIntent', intentId, ...acting }, metadata);
    // Its key was destroyed with the append; other processes forget it at the commit's NOTIFY.
    this.deps.vault.forgetToken(principal.tenantId, intentKeySubject(intentId));
    return { position: outcome.position };
  }
}

/** An intent of the tenant, held and not past its expiry, as its stream has it now. */
export async function heldIntent(
  deps: Pick<TokenIntentCommandDeps, 'store' | 'clock'>,
  tenantId: string,
  intentId: string,
): Promise<TokenIntentView | undefined> {
  const { state } = await aggregateStream(
    deps.store,
    tokenIntentStream(tenantId, intentId),
    tokenIntentDecider,
  );
  return liveIntent(state, deps.clock.now().toISOString());
}

const notFoundIntent = () => notFound('No token intent with this id.');
