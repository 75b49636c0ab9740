import { alreadyExists, DomainError, invalidCommand, notAllowed, notFoundError } from '@tokenvault/platform';
import type { DataOf, Decider } from '@tokenvault/cqrs';
import {
  containerOfPrivacy,
  privacyIssues,
  privacyOf,
  type PrivacyInput,
  type TokenMask,
  type TokenPrivacy,
} from '@tokenvault/contracts';
import { allowedOnAll, revealsOnEvery, type Grants } from './access.ts';
import type {
  BankSummary,
  CardSummary,
  DerivedFromData,
  TokenEvent,
  TokenSearchFields,
} from './tokens.events.ts';
import { mergePatch } from './merge-patch.ts';

/**
 * A token as decided: what its creation recorded (its id as `id`), kept current by the events
 * after it. Its data stays sealed: only the query side opens it, for a reader.
 */
export type TokenView = Omit<DataOf<TokenEvent, 'TokenCreated'>, 'token_id'> & {
  id: string;
  /** Set by the last update. */
  modified_by?: string;
  modified_at?: string;
};

/**
 * An update as the command side prepared it: merge patches of metadata (and the expiry), the
 * containers that replace the token's, and the data the merge of `data` led to, already checked,
 * sealed and fingerprinted (only the command side can open the current data to merge into it).
 */
export interface TokenPatch {
  data?: {
    /** The ciphertext the data was merged into: it must still be the token's. */
    basis: string;
    /**
     * Whether the merged value differs from the token's (the command side compared them): equal
     * data keeps its ciphertext. Not the fingerprint's to say: a card's is of its number alone.
     */
    changed: boolean;
    data_ciphertext: string;
    fingerprint: string;
    /** The summaries of the merged data, and when its CVC goes (absent: it holds none). */
    card?: CardSummary;
    bank?: BankSummary;
    cvc_expires_at?: string;
  };
  /** `null` removes every key; a `null` value removes its key. */
  metadata?: Record<string, string | null> | null;
  containers?: string[];
  /** `null` removes the expiry. */
  expires_at?: string | null;
  /**
   * The search indexes and fingerprint expression after the update, their values evaluated on
   * the data after it by the command side (which alone can open it): set whenever the data, the
   * indexes or the expression change.
   */
  search?: TokenSearchFields;
  /** A new mask, already checked against the data the update leads to; `null`: the type's default. */
  mask?: TokenMask | null;
  /** A new impact level or restriction policy (the classification, if given, must be the token's). */
  privacy?: PrivacyInput;
}

/** As many metadata entries as a create takes. */
export const maxMetadataEntries = 50;

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
      tenantId: string;
      tokenId: string;
      /** The ciphertext the new one seals the data of: it must still be the token's. */
      basis: string;
      data_ciphertext: string;
      actorId: string;
      now: string;
    }
  | {
      /** The CVC's time has come: its data without the CVC, sealed by the command side. */
      type: 'RemoveCvc';
      tenantId: string;
      tokenId: string;
      /** The ciphertext the CVC was removed from: it must still be the token's. */
      basis: string;
      data_ciphertext: string;
      /** What the token derives, recomputed by the command side from the data without the CVC. */
      derived: RecomputedFromData;
      now: string;
    }
  | ({ type: 'AssociateParent'; tokenId: string; parentId: string } & Acting)
  | ({ type: 'DissociateParent'; tokenId: string; parentId: string } & Acting);

/** What the command side recomputes from the data a removal leaves; the decider adds the claims. */
export type RecomputedFromData = Omit<DerivedFromData, 'data_claim' | 'index_claims'>;

const missing = () => notFoundError('No token with this id.');

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
        const {
          token_id: _id,
          tenant_id: _tenant,
          type: _type,
          expires_at,
          index_claims: _claims,
          ...changed
        } = event.data;
        // The event holds the editable state in full: what it leaves out, the token no longer has.
        const {
          expires_at: _previous,
          card: _card,
          bank: _bank,
          cvc_expires_at: _cvc,
          search_indexes: _indexes,
          search_index_values: _values,
          unique_index_values: _unique,
          fingerprint_expression: _expression,
          mask: _mask,
          ...token
        } = state.token;
        return { ...state, token: { ...token, ...changed, ...(expires_at ? { expires_at } : {}) } };
      }
      case 'TokenCvcRemoved': {
        if (state.status !== 'live') return state;
        const { cvc_expires_at: _removed, ...kept } = state.token;
        const { derived } = event.data;
        if (!derived) return { ...state, token: { ...kept, data_ciphertext: event.data.data_ciphertext } };
        // What the data derives is the event's in full: what it leaves out, the token no longer has.
        const {
          card: _card,
          bank: _bank,
          search_indexes: _indexes,
          search_index_values: _values,
          unique_index_values: _unique,
          fingerprint_expression: _expression,
          ...token
        } = kept;
        const { data_claim: _released, index_claims: _claims, ...recomputed } = derived;
        return { ...state, token: { ...token, ...recomputed, data_ciphertext: event.data.data_ciphertext } };
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
      if (state.status !== 'absent') throw alreadyExists('A token with this id exists.');
      const { token } = command;
      return [
        {
          type: 'TokenCreated',
          data: {
            token_id: token.id,
            tenant_id: token.tenant_id,
            type: token.type,
            data_ciphertext: token.data_ciphertext,
            containers: token.containers,
            metadata: token.metadata,
            fingerprint: token.fingerprint,
            ...(token.expires_at === undefined ? {} : { expires_at: token.expires_at }),
            created_by: token.created_by,
            created_at: token.created_at,
            ...(token.parent_id === undefined ? {} : { parent_id: token.parent_id }),
            ...(token.deduplicated ? { deduplicated: true as const } : {}),
            ...(token.claim_taken_from === undefined ? {} : { claim_taken_from: token.claim_taken_from }),
            ...(token.privacy === undefined ? {} : { privacy: token.privacy }),
            ...(token.mask === undefined ? {} : { mask: token.mask }),
            ...(token.card === undefined ? {} : { card: token.card }),
            ...(token.bank === undefined ? {} : { bank: token.bank }),
            ...(token.cvc_expires_at === undefined ? {} : { cvc_expires_at: token.cvc_expires_at }),
            ...searchFieldsOf(token),
          },
        },
      ];
    }
    if (state.status !== 'live') throw missing();
    if (command.type === 'RemoveCvc') return decideCvcRemoval(command, state.token);
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
          throw notAllowed('This API key lacks token:delete on the token’s containers.');
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
          throw invalidCommand('A token cannot be its own child.', {
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
        if (!state.parents.includes(command.parentId)) throw notFoundError('No such association.');
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

/** The search fields that hold something (absent ones are none). */
function searchFieldsOf(fields: TokenSearchFields): TokenSearchFields {
  return {
    ...(fields.search_indexes?.length ? { search_indexes: fields.search_indexes } : {}),
    ...(fields.search_index_values?.length ? { search_index_values: fields.search_index_values } : {}),
    ...(fields.unique_index_values?.length ? { unique_index_values: fields.unique_index_values } : {}),
    ...(fields.fingerprint_expression ? { fingerprint_expression: fields.fingerprint_expression } : {}),
  };
}

/** Whether a patch sets the token's mask (`null` too) or changes its search or fingerprint expressions. */
export function setsExpressions(
  patch: Pick<TokenPatch, 'mask' | 'search'>,
  token: TokenSearchFields,
): boolean {
  if (patch.mask !== undefined) return true;
  if (!patch.search) return false;
  const expressionsOf = (fields: TokenSearchFields) =>
    JSON.stringify([fields.search_indexes ?? [], fields.fingerprint_expression ?? null]);
  return expressionsOf(patch.search) !== expressionsOf(token);
}

/** Setting an expression on a token's data without a rule that reveals it (a 403). */
export const expressionsNeedReveal = () =>
  notAllowed(
    'Setting a token’s mask, search indexes or fingerprint expression needs token:read that reveals the token (not masks or redacts it) on each of its containers: they are evaluated on its data.',
  );

const sameSearch = (a: TokenSearchFields, b: TokenSearchFields) =>
  JSON.stringify(searchFieldsOf(a)) === JSON.stringify(searchFieldsOf(b));

const sameMembers = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, index) => item === b[index]);

const sameMetadata = (a: Record<string, string>, b: Record<string, string>) =>
  sameMembers(Object.keys(a).sort(), Object.keys(b).sort()) &&
  Object.keys(a).every((key) => a[key] === b[key]);

/**
 * The fields of a patch that change where the token is or how its privacy reads (`body.containers`,
 * `body.privacy`): another set of containers, or a privacy whose impact level, restriction policy
 * or classification differs from the token's. The same values sent back (an SDK returning what it
 * read) change nothing and name nothing.
 */
export function placementFieldsChangedBy(
  patch: Pick<TokenPatch, 'containers' | 'privacy'>,
  token: Pick<TokenView, 'type' | 'containers' | 'privacy'>,
): string[] {
  const fields: string[] = [];
  if (patch.containers) {
    const after = [...new Set(patch.containers)].sort();
    if (!sameMembers(after, [...new Set(token.containers)].sort())) fields.push('body.containers');
  }
  if (patch.privacy) {
    const before = privacyOf(token.type, token.privacy);
    const given = patch.privacy;
    const differs = (['classification', 'impact_level', 'restriction_policy'] as const).some(
      (field) => given[field] !== undefined && given[field] !== before[field],
    );
    if (differs) fields.push('body.privacy');
  }
  return fields;
}

/**
 * Moving a token or changing its privacy without a rule that reveals it where it is and goes (a
 * 403 naming the fields): either changes what other keys' rules show of it, which only a key
 * that may see all of it may decide.
 */
export const placementNeedsReveal = (fields: readonly string[]) =>
  notAllowed(
    'Changing a token’s containers or privacy changes what other keys read of it: it needs token:read that reveals the token (not masks or redacts it) on each container it is in and goes to.',
    Object.fromEntries(
      fields.map((field) => [
        field,
        [
          'Needs a token:read rule that reveals the token on every container it is in and goes to (or token:read tenant-wide); leave it out to keep it as it is',
        ],
      ]),
    ),
  );

/**
 * The token's data changed after a data patch was merged into it: the command side merges again
 * into the new data (so two identical patches at once both succeed); only a token that keeps
 * changing under it answers this conflict. A class of its own so the command side can tell it.
 */
export class StaleDataBasis extends DomainError {
  constructor() {
    super('conflict', 'The token changed while this update was prepared; retry the request.');
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
    throw notAllowed('This API key lacks token:update on the token’s containers.');
  }
  // Where the token is and how its privacy reads decide what OTHER keys see of it: a change of
  // either is authored only by a key its rules reveal the token to (docs/security.md, "Authoring
  // what others read"), refused before anything of the patch is checked.
  const changing = placementFieldsChangedBy(patch, token);
  if (changing.length && !revealsOnEvery(command.grants, token.containers)) {
    throw placementNeedsReveal(changing);
  }
  const privacy = privacyAfterUpdate(token, patch.privacy);
  const containers = patch.containers
    ? [...new Set(patch.containers)]
    : privacy
      ? containersFollowingPrivacy(token, privacy)
      : token.containers;
  if (!allowedOnAll(command.grants, 'token:update', containers)) {
    throw notAllowed('This API key lacks token:update on the requested containers.');
  }
  if (changing.length && !revealsOnEvery(command.grants, containers)) {
    throw placementNeedsReveal(changing);
  }
  // Expressions on the token's data are set only by a caller its rules reveal it to, where it is
  // and where it goes: a mask or an index is another way to read the data (docs/security.md).
  if (
    setsExpressions(patch, token) &&
    !revealsOnEvery(command.grants, [...new Set([...token.containers, ...containers])])
  ) {
    throw expressionsNeedReveal();
  }
  const metadata =
    patch.metadata === undefined
      ? token.metadata
      : patch.metadata === null
        ? {}
        : (mergePatch(token.metadata, patch.metadata) as Record<string, string>);
  if (Object.keys(metadata).length > maxMetadataEntries) {
    throw invalidCommand('The metadata the patch leads to has too many entries.', {
      'body.metadata': [`At most ${maxMetadataEntries} entries`],
    });
  }
  const expiresAt =
    patch.expires_at === undefined
      ? token.expires_at
      : patch.expires_at === null
        ? undefined
        : new Date(patch.expires_at).toISOString();
  let { data_ciphertext, fingerprint, card, bank, cvc_expires_at } = token;
  const mask = patch.mask === null ? undefined : (patch.mask ?? token.mask);
  if (patch.data) {
    // The data was merged into what the token held when the command side read it: another update
    // since then would be lost by appending this one.
    if (patch.data.basis !== token.data_ciphertext) throw new StaleDataBasis();
    // Equal data keeps its ciphertext (and its summaries, and its CVC's time); its fingerprint
    // is the command side's either way (a new fingerprint expression changes it).
    if (patch.data.changed) ({ data_ciphertext, card, bank, cvc_expires_at } = patch.data);
    fingerprint = patch.data.fingerprint;
  }
  const search = patch.search ? searchFieldsOf(patch.search) : searchFieldsOf(token);
  const uniqueBefore = [...(token.unique_index_values ?? [])].sort();
  const uniqueAfter = [...(search.unique_index_values ?? [])].sort();
  const sameIdentity =
    fingerprint === token.fingerprint && sameMembers([...containers].sort(), [...token.containers].sort());
  if (
    data_ciphertext === token.data_ciphertext &&
    sameIdentity &&
    sameMembers(containers, token.containers) &&
    sameMetadata(metadata, token.metadata) &&
    expiresAt === token.expires_at &&
    sameSearch(search, token) &&
    JSON.stringify(mask) === JSON.stringify(token.mask) &&
    privacy === undefined
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
        created_at: token.created_at,
        ...(mask === undefined ? {} : { mask }),
        ...(privacy === undefined ? {} : { privacy }),
        ...(card ? { card } : {}),
        ...(bank ? { bank } : {}),
        ...(cvc_expires_at ? { cvc_expires_at } : {}),
        ...search,
        ...(sameMembers(uniqueBefore, uniqueAfter) ? {} : { index_claims: true as const }),
      },
    },
  ];
}

/**
 * The token's privacy after an update's `privacy` (undefined: unchanged). As Basis Theory's
 * update, only the impact level (not below the type's lowest) and the restriction policy change;
 * a classification given must be the token's (an SDK may send back what it read).
 */
function privacyAfterUpdate(token: TokenView, given: PrivacyInput | undefined): TokenPrivacy | undefined {
  if (!given) return undefined;
  const before = privacyOf(token.type, token.privacy);
  if (given.classification !== undefined && given.classification !== before.classification) {
    throw invalidCommand('A token’s classification cannot change.', {
      'body.privacy.classification': [
        `Must be ${before.classification} (the token’s) or left out: data of another class goes in a new token`,
      ],
    });
  }
  const issues = privacyIssues(token.type, given);
  if (issues.length) {
    throw invalidCommand('The privacy is not valid for this token’s type; see errors.', {
      ...Object.fromEntries(issues.map((issue) => [`body.privacy.${issue.field}`, [issue.message]])),
    });
  }
  const after: TokenPrivacy = {
    classification: before.classification,
    impact_level: given.impact_level ?? before.impact_level,
    restriction_policy: given.restriction_policy ?? before.restriction_policy,
  };
  const unchanged =
    after.impact_level === before.impact_level && after.restriction_policy === before.restriction_policy;
  return unchanged ? undefined : after;
}

/**
 * Containers under the old privacy's (`/pci/high/…`) move to the new one's (`/pci/moderate/…`),
 * as a create without containers puts a token where its privacy says; the others stay.
 */
function containersFollowingPrivacy(token: TokenView, privacy: TokenPrivacy): string[] {
  const from = containerOfPrivacy(privacyOf(token.type, token.privacy));
  const to = containerOfPrivacy(privacy);
  return [
    ...new Set(
      token.containers.map((container) =>
        container.startsWith(from) ? `${to}${container.slice(from.length)}` : container,
      ),
    ),
  ];
}

/**
 * A CVC's removal, once its time has come: nothing when the token holds none any more, or holds
 * a newer one whose time is still to come (an update gave it: its own removal is scheduled).
 */
function decideCvcRemoval(
  command: Extract<TokenCommand, { type: 'RemoveCvc' }>,
  token: TokenView,
): TokenEvent[] {
  if (!token.cvc_expires_at || Date.parse(token.cvc_expires_at) > Date.parse(command.now)) return [];
  if (command.basis !== token.data_ciphertext) throw new StaleDataBasis();
  return [
    {
      type: 'TokenCvcRemoved',
      data: {
        token_id: token.id,
        tenant_id: token.tenant_id,
        type: token.type,
        data_ciphertext: command.data_ciphertext,
        removed_at: command.now,
        derived: derivedAfterRemoval(token, command.derived),
      },
    },
  ];
}

/**
 * What a field's removal records of the data's derived values: the recomputed ones in full, and
 * the claims they move. A changed fingerprint gives up the claim on the old data (never claims
 * the new one: a removal must not fail on another token's claim, nor answer for it); changed
 * unique index values give up the old claims and claim the new ones (the command side keeps
 * among them only those the token held when another token holds one).
 */
export function derivedAfterRemoval(token: TokenView, recomputed: RecomputedFromData): DerivedFromData {
  const fields = searchFieldsOf(recomputed);
  const uniqueBefore = [...(token.unique_index_values ?? [])].sort();
  const uniqueAfter = [...(fields.unique_index_values ?? [])].sort();
  return {
    fingerprint: recomputed.fingerprint,
    ...(recomputed.card ? { card: recomputed.card } : {}),
    ...(recomputed.bank ? { bank: recomputed.bank } : {}),
    ...fields,
    ...(recomputed.fingerprint === token.fingerprint ? {} : { data_claim: 'released' as const }),
    ...(sameMembers(uniqueBefore, uniqueAfter) ? {} : { index_claims: true as const }),
  };
}
