import type { DataOf, DomainEvent } from '@tokenvault/cqrs';
import type { ProxiesEvent } from '@tokenvault/proxy';
import type { ReactorsEvent } from '@tokenvault/reactors';
import type { TenancyEvent } from '@tokenvault/tenancy';
import type { TokensContextEvent } from '@tokenvault/tokens';
import type { WebhooksEvent } from '@tokenvault/webhooks';
import type { TenantKeyRewrappedData, TenantKeyRotatedData } from '@tokenvault/vault';

/**
 * What a log row says about an event; the tenant and actor come from the event's metadata, but
 * for an event that records the acts of several (TokensReadBatch): each of its rows names its own.
 */
export interface LogEntry {
  entity_type: string;
  entity_id: string;
  operation: 'create' | 'update' | 'read' | 'delete';
  message: string;
  actedBy?: { tenant_id: string; actor_id: string; actor_type: 'application' | 'user' | 'system' };
}

/** Every event the log has rows for: each context's, and the key store's key operations. */
export type LoggedEvent =
  | TenancyEvent
  | TokensContextEvent
  | ReactorsEvent
  | ProxiesEvent
  | WebhooksEvent
  | DomainEvent<'TenantKeyRotated', TenantKeyRotatedData>
  | DomainEvent<'TenantKeyRewrapped', TenantKeyRewrappedData>;

type LoggedType = LoggedEvent['type'];
type LoggedData = { [Type in LoggedType]: DataOf<LoggedEvent, Type> };

/**
 * The log rows of each event type, a function of that type's own data: one row, or one per
 * entity an event names (a read of many tokens). A mapping that reads a field its event's data
 * does not have (renamed, removed) fails to compile, and so does a type with no mapping or a
 * mapping of no type.
 */
export type LogMappings = { [Type in LoggedType]: (data: LoggedData[Type]) => LogEntry[] };

/** One row about the entity whose id is the `idField` of the event's data. */
const entry =
  <IdField extends string>(
    entityType: string,
    idField: IdField,
    operation: LogEntry['operation'],
    message: string,
  ) =>
  (data: Record<IdField, string>): LogEntry[] => [
    { entity_type: entityType, entity_id: String(data[idField]), operation, message },
  ];

/** A token's entity type is its token type: token, card or bank. */
const tokenEntry =
  (operation: LogEntry['operation'], message: string) =>
  (data: { type: string; token_id: string }): LogEntry[] => [
    { entity_type: String(data.type), entity_id: String(data.token_id), operation, message },
  ];

/** A token's row of a read, saying what the read showed. */
const readEntry = (token: { type: string; token_id: string; transform?: 'mask' | 'redact' }): LogEntry => ({
  entity_type: token.type,
  entity_id: token.token_id,
  operation: 'read',
  message:
    token.transform === 'mask'
      ? 'Token retrieved (masked)'
      : token.transform === 'redact'
        ? 'Token retrieved (redacted)'
        : 'Token retrieved',
});

/**
 * THE place where each event type becomes a log row: a context that adds an event type adds its
 * line here (it does not compile until it does).
 */
const mappings = {
  TenantCreated: entry('tenant', 'tenant_id', 'create', 'Tenant created'),
  TenantUpdated: entry('tenant', 'tenant_id', 'update', 'Tenant updated'),
  TenantDeleted: entry('tenant', 'tenant_id', 'delete', 'Tenant deleted'),
  UserRegistered: entry('user', 'user_id', 'create', 'User registered'),
  MemberAdded: entry('tenant_member', 'member_id', 'create', 'Tenant member added'),
  MemberRemoved: entry('tenant_member', 'member_id', 'delete', 'Tenant member removed'),
  InvitationCreated: entry('tenant_invitation', 'invitation_id', 'create', 'Tenant invitation created'),
  InvitationResent: entry('tenant_invitation', 'invitation_id', 'update', 'Tenant invitation resent'),
  InvitationDeleted: entry('tenant_invitation', 'invitation_id', 'delete', 'Tenant invitation deleted'),
  InvitationAccepted: entry('tenant_invitation', 'invitation_id', 'delete', 'Tenant invitation accepted'),
  ApplicationCreated: entry('application', 'application_id', 'create', 'Application created'),
  ApplicationUpdated: entry('application', 'application_id', 'update', 'Application updated'),
  ApplicationDeleted: entry('application', 'application_id', 'delete', 'Application deleted'),
  ApplicationKeyCreated: entry('application_key', 'key_id', 'create', 'Application key created'),
  ApplicationKeyDeleted: entry('application_key', 'key_id', 'delete', 'Application key deleted'),
  TokenCreated: tokenEntry('create', 'Token created'),
  TokenUpdated: tokenEntry('update', 'Token updated'),
  TokenDeleted: tokenEntry('delete', 'Token deleted'),
  TokenReencrypted: tokenEntry('update', 'Token re-encrypted under a new key (old key destroyed)'),
  TokenCvcRemoved: tokenEntry('update', 'Card CVC removed (its retention time passed; old key destroyed)'),
  TenantKeyRotated: (data) => [
    {
      entity_type: 'tenant',
      entity_id: String(data.tenant_id),
      operation: 'update',
      message: `Tenant key rotated to version ${String(data.version)}`,
    },
  ],
  TenantKeyRewrapped: (data) => [
    {
      entity_type: 'tenant',
      entity_id: String(data.tenant_id),
      operation: 'update',
      message: `Tenant key version ${String(data.version)} re-wrapped under master key ${String(data.master_key_version)}`,
    },
  ],
  TokenAssociated: (data) => [
    {
      entity_type: String(data.type),
      entity_id: String(data.child_id),
      operation: 'update',
      message: `Token associated as a child of ${String(data.parent_id)}`,
    },
  ],
  TokenDissociated: (data) => [
    {
      entity_type: String(data.type),
      entity_id: String(data.child_id),
      operation: 'update',
      message: `Token no longer a child of ${String(data.parent_id)}`,
    },
  ],
  TokenRead: tokenEntry('read', 'Token retrieved'),
  TokensRead: (data) => data.tokens.map(readEntry),
  TokensReadBatch: (data) =>
    data.reads.flatMap((read) =>
      read.tokens.map((token) => ({
        ...readEntry(token),
        actedBy: { tenant_id: read.tenant_id, actor_id: read.read_by, actor_type: read.reader_type },
      })),
    ),
  TokenIntentCreated: entry('token_intent', 'intent_id', 'create', 'Token intent created'),
  TokenIntentConverted: (data) => [
    {
      entity_type: 'token_intent',
      entity_id: String(data.intent_id),
      operation: 'delete',
      message: `Token intent made token ${String(data.token_id)} (its key destroyed)`,
    },
  ],
  TokenIntentDeleted: entry(
    'token_intent',
    'intent_id',
    'delete',
    'Token intent deleted (its key destroyed)',
  ),
  TokenIntentExpired: entry(
    'token_intent',
    'intent_id',
    'delete',
    'Token intent expired (its key destroyed)',
  ),
  ReactorFormulaCreated: entry('reactor_formula', 'formula_id', 'create', 'Reactor formula created'),
  ReactorFormulaUpdated: entry('reactor_formula', 'formula_id', 'update', 'Reactor formula updated'),
  ReactorFormulaDeleted: entry('reactor_formula', 'formula_id', 'delete', 'Reactor formula deleted'),
  ReactorCreated: entry('reactor', 'reactor_id', 'create', 'Reactor created'),
  ReactorUpdated: entry('reactor', 'reactor_id', 'update', 'Reactor updated'),
  ReactorDeleted: entry('reactor', 'reactor_id', 'delete', 'Reactor deleted'),
  ProxyCreated: entry('proxy', 'proxy_id', 'create', 'Proxy created'),
  ProxyUpdated: entry('proxy', 'proxy_id', 'update', 'Proxy updated'),
  ProxyDeleted: entry('proxy', 'proxy_id', 'delete', 'Proxy deleted'),
  WebhookCreated: entry('webhook', 'webhook_id', 'create', 'Webhook created'),
  WebhookUpdated: entry('webhook', 'webhook_id', 'update', 'Webhook updated'),
  WebhookDeleted: entry('webhook', 'webhook_id', 'delete', 'Webhook deleted'),
  WebhookDisabled: entry('webhook', 'webhook_id', 'update', 'Webhook disabled by its failed deliveries'),
  WebhookSigningKeyRotated: entry('webhook_signing_key', 'key_id', 'create', 'Webhook signing key made'),
} satisfies LogMappings;

/** Every event type the log has rows for (exactly the keys `satisfies LogMappings` checked). */
export const loggedEventTypes = Object.keys(mappings) as LoggedType[];

/** The log rows of an event: its type picks the mapping of its data. */
export function logEntriesOf<Type extends LoggedType>(event: {
  type: Type;
  data: LoggedData[Type];
}): LogEntry[] {
  const byType: LogMappings = mappings;
  return byType[event.type](event.data);
}

/**
 * The same mappings by type name, for what reads stored events as they are, a type name and JSON
 * data (the e2e specs): each takes the data of its own type, as LogMappings says.
 */
export const logMappings = mappings as unknown as Record<
  string,
  (data: Record<string, unknown>) => LogEntry[]
>;

/** Every entity type the log names, for GET /logs/entity-types. */
export const entityTypes = [
  { value: 'application', display_name: 'Application' },
  { value: 'application_key', display_name: 'Application Key' },
  { value: 'bank', display_name: 'Bank' },
  { value: 'card', display_name: 'Card' },
  { value: 'card_number', display_name: 'Card Number' },
  { value: 'employer_id_number', display_name: 'Employer ID Number' },
  { value: 'proxy', display_name: 'Proxy' },
  { value: 'reactor', display_name: 'Reactor' },
  { value: 'reactor_formula', display_name: 'Reactor Formula' },
  { value: 'social_security_number', display_name: 'Social Security Number' },
  { value: 'tenant', display_name: 'Tenant' },
  { value: 'tenant_invitation', display_name: 'Tenant Invitation' },
  { value: 'tenant_member', display_name: 'Tenant Member' },
  { value: 'token', display_name: 'Token' },
  { value: 'token_intent', display_name: 'Token Intent' },
  { value: 'us_bank_account_number', display_name: 'US Bank Account Number' },
  { value: 'us_bank_routing_number', display_name: 'US Bank Routing Number' },
  { value: 'user', display_name: 'User' },
  { value: 'webhook', display_name: 'Webhook' },
  { value: 'webhook_signing_key', display_name: 'Webhook Signing Key' },
] as const;
