import { commandHandler, type CommandHandler } from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import { tokenStream } from '../domain/tokens.events.ts';
import type { TokenEvent } from '../domain/tokens.events.ts';
import { tokenDecider, type TokenCommand, type TokenState } from '../domain/token.ts';

/** The stream a token command goes to: the token's own (a create names it in the token it carries). */
export const tokenStreamOf = (command: TokenCommand): string =>
  command.type === 'CreateToken'
    ? tokenStream(command.token.tenant_id, command.token.id)
    : tokenStream(command.tenantId, command.tokenId);

/** The token aggregate's command handler, bound to a store. */
export function tokenCommandHandler(store: EventStore): CommandHandler<TokenState, TokenCommand, TokenEvent> {
  return commandHandler(store, tokenDecider, tokenStreamOf);
}
