import { badRequest, conflict, forbidden, notFound, Problem } from '@tokenvault/platform';
import type { Decider, DomainEvent } from '@tokenvault/cqrs';
import type { TokenType } from '@tokenvault/contracts';
import { allowedOnAll, type Grants } from './access.ts';
import { mergePatch } from './merge-patch.ts';

/** A token as decided. Its data stays sealed: only the query side opens it, for a reader. */
export interface TokenView {
  id: string;
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
  /** Set when the token was created as a child: its first association, made in the same event. */
  parent_id?: string;
  /** Created while its tenant deduplicates: it holds the claim on its data (domain/uniqueness.ts). */
  deduplicated?: true;
  /** The expired token whose claim on the same data it takes over. */
  claim_taken_from?: string;
  /** Set by the last update. */
  modified_by?: string;
  modified_at?: string;
}

/** The fields an update sets: the token's editable state after it, in full. */
export interface TokenUpdate {
  token_id: string;
  tenant_id: string;
  type: TokenType;
  /** The data sealed again when it changed; the same ciphertext when it did not. */
  data_ciphertext: string;
  fingerprint: string;
  containers: string[];
  metadata: Record<string, string>;
  /** Absent: the token does not expire (any earlier expiry was removed). */
  expires_at?: string;
  /**
   * Set when the data or containers changed: the token gives up its claim on the old data
   * (`released`), or moves it to the new data while its tenant deduplicates (`moved`); see
   * domain/uniqueness.ts.
   */
  data_claim?: 'released' | 'moved';
  modified_by: string;
  modified_at: string;
}

/**
 * An update as the command side prepared it: merge patches of metadata (and the expiry), the
 * containers that replace the token's, and the data the merge of `data` led to, already checked,
 * sealed and fingerprinted (only the command side can open the current data to merge into it).
 */
export interface TokenPatch {
  data?: {
    /** The ciphertext the data was merged into: it must still be the token's. */
    basis: string;
    data_ciphertext: string;
    fingerprint: string;
  };
  /** `null` removes every key; a `null` value removes its key. */
  metadata?: Record<string, string | null> | null;
  containers?: string[];
  /** `null` removes the expiry. */
  expires_at?: string | null;
}

/** As many metadata entries as a create takes. */
export const maxMetadataEntries = 50;

/**
 * A token's events, all in its own stream. Associations are kept in the CHILD's stream, so that
 * creating a child and its association is one event, and every association of a token as a
 * child is known exactly from its own history.
 */
export type TokenEvent =
  /** The whole token as decided, under its event's name for the id. */
  | DomainEvent<'TokenCreated', Omit<TokenView, 'id' | 'modified_by' | 'modified_at'> & { token_id: string }>
  /** The token's editable state after the change (data sealed, like TokenCreated's). */
  | DomainEvent<'TokenUpdated', TokenUpdate>
  | DomainEvent<
      'TokenAssociated',
      {
        tenant_id: string;
        parent_id: string;
        child_id: string;
        type: TokenType;
        /** The child's containers and expiry, which child lists filter on. */
        containers: string[];
        expires_at?: string;
        associated_by: string;
        associated_at: string;
      }
    >
  | DomainEvent<
      'TokenDissociated',
      {
        tenant_id: string;
        parent_id: string;
        child_id: string;
        type: TokenType;
        dissociated_by: string;
        dissociated_at: string;
      }
    >
  /**
   * The token's data sealed again under a new token key (its old key, thought compromised, is
   * destroyed with this append): the same data, a new ciphertext; nothing else changes.
   */
  | DomainEvent<
      'TokenReencrypted',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        data_ciphertext: string;
        reencrypted_by: string;
        reencrypted_at: string;
      }
    >
  | DomainEvent<
      'TokenDeleted',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        /** The associations the deletion ends: as a child (exact) and as a parent (as listed then). */
        parent_ids: string[];
        child_ids: string[];
        deleted_by: string;
        deleted_at: string;
      }
    >;

/**
 * A read of one token's data, as events written before TokensRead existed record it: still
 * projected, no longer appended.
 */
export type TokenReadEvent = DomainEvent<
  'TokenRead',
  { token_id: string; tenant_id: string; type: TokenType; read_by: string; read_at: string }
>;

/** At most this many tokens in one TokensRead (a page holds at most 100). */
export const maxTokensPerRead = 100;

/**
 * The tokens whose data one request read, appended before the data is returned: the audit log has
 * a `read` row for each, and the monthly active tokens count each. Not part of the tokens' own
 * streams (reads must not contend with writes).
 */
export type TokensReadEvent = DomainEvent<
  'TokensRead',
  { tenant_id: string; tokens: { token_id: string; type: TokenType }[]; read_by: string; read_at: string }
>;

/** Every event this context appends (or appended). */
export type TokensContextEvent = TokenEvent | TokenReadEvent | TokensReadEvent;

export type TokenState =
  { status: 'absent' } | { status: 'live'; token: TokenView; parents: string[] } | { status: 'deleted' };

interface Acting {
  tenantId: string;
  grants: Grants;
  actorId: string;
  now: string;
}

export type TokenCommand =
  | { type: 'CreateToken'; token: TokenView }
  | ({
      type: 'UpdateToken';
      tokenId: string;
      patch: TokenPatch;
      /** The tenant deduplicates tokens: new data or containers claim their key. */
      deduplicate?: boolean;
    } & Acting)
  | ({ type: 'DeleteToken'; tokenId: string; childIds: string[] } & Acting)
  | {
      type: 'ReencryptToken';
      tokenId: string;
      /** The ciphertext the new one seals the data of: it must still be the token's. */
      basis: string;
      data_ciphertext: string;
      actorId: string;
      now: string;
    }
  | ({ type: 'AssociateParent'; tokenId: string; parentId: string } & Acting)
  | ({ type: 'DissociateParent'; tokenId: string; parentId: string } & Acting);

export const tokenStream = (tenantId: string, tokenId: string) => `tokens.token-${tenantId}-${tokenId}`;

const missing = () => notFound('No token with this id.');

export const tokenDecider: Decider<TokenState, TokenCommand, TokenEvent> = {
  initialState: () => ({ status: 'absent' }),
  evolve(state, event) {
    switch (event.type) {
      case 'TokenCreated': {
        const { token_id, ...rest } = event.data;
        return {
          status: 'live',
          token: { id: token_id, ...rest },
          parents: rest.parent_id ? [rest.parent_id] : [],
        };
      }
      case 'TokenUpdated': {
        if (state.status !== 'live') return state;
        const { token_id: _id, tenant_id: _tenant, type: _type, expires_at, ...changed } = event.data;
        const { expires_at: _previous, ...token } = state.token;
        return { ...state, token: { ...token, ...changed, ...(expires_at ? { expires_at } : {}) } };
      }
      case 'TokenAssociated':
        if (state.status !== 'live') return state;
        return { ...state, parents: [...state.parents, event.data.parent_id] };
      case 'TokenDissociated':
        if (state.status !== 'live') return state;
        return { ...state, parents: state.parents.filter((parent) => parent !== event.data.parent_id) };
      case 'TokenReencrypted':
        if (state.status !== 'live') return state;
        return { ...state, token: { ...state.token, data_ciphertext: event.data.data_ciphertext } };
      case 'TokenDeleted':
        return { status: 'deleted' };
    }
  },
  decide(command, state) {
    if (command.type === 'CreateToken') {
      // Ids are never reused, not even after a delete: a token id names one value forever.
      if (state.status !== 'absent') throw conflict('A token with this id exists.');
      const { id, ...rest } = command.token;
      return [{ type: 'TokenCreated', data: { token_id: id, ...rest } }];
    }
    if (state.status !== 'live') throw missing();
    if (command.type === 'ReencryptToken') {
      if (command.basis !== state.token.data_ciphertext) throw new StaleDataBasis();
      return [
        {
          type: 'TokenReencrypted',
          data: {
            token_id: command.tokenId,
            tenant_id: state.token.tenant_id,
            type: state.token.type,
            data_ciphertext: command.data_ciphertext,
            reencrypted_by: command.actorId,
            reencrypted_at: command.now,
          },
        },
      ];
    }
    const common = { tenant_id: command.tenantId, type: state.token.type };
    switch (command.type) {
      case 'UpdateToken':
        return decideUpdate(command, state.token);
      case 'DeleteToken':
        if (!allowedOnAll(command.grants, 'token:delete', state.token.containers)) {
          throw forbidden('This API key lacks token:delete on the token’s containers.');
        }
        return [
          {
            type: 'TokenDeleted',
            data: {
              token_id: command.tokenId,
              ...common,
              parent_ids: state.parents,
              child_ids: command.childIds,
              deleted_by: command.actorId,
              deleted_at: command.now,
            },
          },
        ];
      case 'AssociateParent':
        if (command.parentId === command.tokenId)
          throw badRequest('A token cannot be its own child.', {
            'path.child_id': ['Must differ from parent_id'],
          });
        // Already there: a success that changes nothing.
        if (state.parents.includes(command.parentId)) return [];
        return [
          {
            type: 'TokenAssociated',
            data: {
              ...common,
              parent_id: command.parentId,
              child_id: command.tokenId,
              containers: state.token.containers,
              ...(state.token.expires_at ? { expires_at: state.token.expires_at } : {}),
              associated_by: command.actorId,
              associated_at: command.now,
            },
          },
        ];
      case 'DissociateParent':
        if (!state.parents.includes(command.parentId)) throw notFound('No such association.');
        return [
          {
            type: 'TokenDissociated',
            data: {
              ...common,
              parent_id: command.parentId,
              child_id: command.tokenId,
              dissociated_by: command.actorId,
              dissociated_at: command.now,
            },
          },
        ];
    }
  },
};

const sameMembers = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, index) => item === b[index]);

const sameMetadata = (a: Record<string, string>, b: Record<string, string>) =>
  sameMembers(Object.keys(a).sort(), Object.keys(b).sort()) &&
  Object.keys(a).every((key) => a[key] === b[key]);

/**
 * The token's data changed after a data patch was merged into it: the command side merges again
 * into the new data (so two identical patches at once both succeed); only a token that keeps
 * changing under it answers this 409.
 */
export class StaleDataBasis extends Problem {
  constructor() {
    super(
      409,
      'conflict',
      'Conflict',
      'The token changed while this update was prepared; retry the request.',
    );
  }
}

/**
 * The merge of a prepared patch into a live token. `token:update` is needed on every container
 * the token is in before AND after (a key cannot move a token into or out of containers it may
 * not update). A patch that changes nothing appends nothing.
 */
function decideUpdate(
  command: Extract<TokenCommand, { type: 'UpdateToken' }>,
  token: TokenView,
): TokenEvent[] {
  // An expired token is gone for updates too (the route's read-model check says the same).
  if (token.expires_at && Date.parse(token.expires_at) <= Date.parse(command.now)) throw missing();
  const { patch } = command;
  if (!allowedOnAll(command.grants, 'token:update', token.containers)) {
    throw forbidden('This API key lacks token:update on the token’s containers.');
  }
  const containers = patch.containers ? [...new Set(patch.containers)] : token.containers;
  if (!allowedOnAll(command.grants, 'token:update', containers)) {
    throw forbidden('This API key lacks token:update on the requested containers.');
  }
  const metadata =
    patch.metadata === undefined
      ? token.metadata
      : patch.metadata === null
        ? {}
        : (mergePatch(token.metadata, patch.metadata) as Record<string, string>);
  if (Object.keys(metadata).length > maxMetadataEntries) {
    throw badRequest('The metadata the patch leads to has too many entries.', {
      'body.metadata': [`At most ${maxMetadataEntries} entries`],
    });
  }
  const expiresAt =
    patch.expires_at === undefined
      ? token.expires_at
      : patch.expires_at === null
        ? undefined
        : new Date(patch.expires_at).toISOString();
  let { data_ciphertext, fingerprint } = token;
  if (patch.data) {
    // The data was merged into what the token held when the command side read it: another update
    // since then would be lost by appending this one.
    if (patch.data.basis !== token.data_ciphertext) throw new StaleDataBasis();
    // Equal data keeps its ciphertext: the fingerprint says whether the value changed.
    if (patch.data.fingerprint !== token.fingerprint) ({ data_ciphertext, fingerprint } = patch.data);
  }
  const sameIdentity =
    fingerprint === token.fingerprint && sameMembers([...containers].sort(), [...token.containers].sort());
  if (
    sameIdentity &&
    sameMembers(containers, token.containers) &&
    sameMetadata(metadata, token.metadata) &&
    expiresAt === token.expires_at
  ) {
    return [];
  }
  return [
    {
      type: 'TokenUpdated',
      data: {
        token_id: token.id,
        tenant_id: token.tenant_id,
        type: token.type,
        data_ciphertext,
        fingerprint,
        containers,
        metadata,
        ...(expiresAt ? { expires_at: expiresAt } : {}),
        ...(sameIdentity
          ? {}
          : { data_claim: command.deduplicate ? ('moved' as const) : ('released' as const) }),
        modified_by: command.actorId,
        modified_at: command.now,
      },
    },
  ];
}

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const tokenEventTypes = Object.keys({
  TokenCreated: true,
  TokenUpdated: true,
  TokenAssociated: true,
  TokenDissociated: true,
  TokenDeleted: true,
  TokenReencrypted: true,
  TokenRead: true,
  TokensRead: true,
} satisfies Record<TokensContextEvent['type'], true>) as TokensContextEvent['type'][];

/**
 * Reads go to a few streams shared by every tenant (each event names its tenant), so that
 * concurrent read-audit appends neither queue on one stream nor multiply with the tenants.
 */
export const tokenReadsStream = (shard: number) => `tokens.reads-${shard}`;
