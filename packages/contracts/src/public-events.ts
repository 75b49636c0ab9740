// The public contract of the events published on Kafka: docs/events.md is generated from it
// (events-doc.ts), and the relay's messages wrap what it allows in a CloudEvent (cloud-event.ts).
//
// An ALLOW-LIST: each event type names its topic, the entity it is about (the Kafka key and the
// CloudEvents subject) and a zod schema of its PUBLIC data. The relay publishes
// `schema.parse(data)`, which drops every field the schema does not name; an event type without
// an entry here is never published. Sensitive data (token data or its ciphertext, fingerprints,
// API keys or their hashes, invitation tokens, reactor configurations or their ciphertext, formula
// code) and personal data beyond ids (e-mail addresses, names of people) have no field here, so
// they can never reach a consumer.
import { z } from 'zod';
import { applicationTypes } from './applications.schemas.ts';
import { permissionSchema } from './permissions.schemas.ts';
import { tokenTypeSchema } from './tokens.schemas.ts';
import { formulaTypes, parameterTypes } from './reactors.schemas.ts';

/** One topic per bounded context: `<KAFKA_TOPIC_PREFIX>.<topic>`. */
export const eventTopics = ['tokens', 'tenancy', 'reactors', 'proxies', 'webhooks', 'audit'] as const;
export type EventTopic = (typeof eventTopics)[number];

export interface PublicEventContract<Schema extends z.ZodObject = z.ZodObject> {
  topic: EventTopic;
  /** What happened, for docs/events.md. */
  description: string;
  /** The kind of entity the event is about, e.g. `token`. */
  entity: string;
  /**
   * The entity's id, from the public data: the Kafka key (so one entity's events stay in order on
   * one partition) and the CloudEvents `subject`. Ids that are only unique within a tenant are
   * prefixed with the tenant id (`<tenant_id>/<id>`).
   */
  entityId(data: z.output<Schema>): string;
  /** The public data: unknown keys are stripped when parsed. */
  schema: Schema;
}

const id = (what: string) => z.string().describe(what);
const at = (what: string) => z.string().describe(`${what} (ISO 8601)`);
const tenantId = id('The tenant.');
const rules = z
  .array(
    z.object({
      description: z.string().optional().describe('What the rule is for.'),
      priority: z.number().int().optional().describe('Evaluation order, 1 first.'),
      container: z.string(),
      transform: z
        .enum(['reveal', 'mask', 'redact'])
        .optional()
        .describe('What a read decided by it shows (absent: reveal).'),
      permissions: z.array(permissionSchema),
    }),
  )
  .describe('Token permissions per container (and everything below it), evaluated by priority.');

const rateLimit = z
  .object({
    requests_per_minute: z.number().int().optional().describe('Requests per minute with its key.'),
  })
  .optional()
  .describe('Its own request quota (absent: the service default).');

const contract = <Schema extends z.ZodObject>(entry: PublicEventContract<Schema>) =>
  entry as unknown as PublicEventContract;

/** The fields of a parent/child association, shared by its two events. */
const association = {
  tenant_id: tenantId,
  parent_id: id('The parent token.'),
  child_id: id('The child token.'),
  type: tokenTypeSchema.describe('The child token type.'),
};

/** A formula's declarations (names and types): its code is never published. */
const formula = {
  formula_id: id('The reactor formula.'),
  tenant_id: tenantId,
  name: z.string().describe('The formula name.'),
  type: z.enum(formulaTypes).describe('The formula type.'),
  configuration: z
    .array(z.object({ name: z.string(), type: z.enum(parameterTypes) }))
    .describe('The configuration a reactor of it must hold (names and types).'),
  request_parameters: z
    .array(z.object({ name: z.string(), type: z.enum(parameterTypes), optional: z.boolean() }))
    .describe('The arguments an invocation takes (dotted names nest).'),
};

/** A reactor without its configuration (it often holds credentials; the events hold it sealed). */
const reactor = {
  reactor_id: id('The reactor.'),
  tenant_id: tenantId,
  name: z.string().describe('The reactor name.'),
  application_id: id('The application whose key its runtime client uses, when it has one.').optional(),
};

/**
 * A proxy without its secrets: its key, configuration (often credentials), transforms' code and
 * destination URL (which may carry credentials in its query) are never published.
 */
const proxy = {
  proxy_id: id('The proxy.'),
  tenant_id: tenantId,
  name: z.string().describe('The proxy name.'),
  request_reactor_id: id('The reactor run on each request, when it has one.').optional(),
  response_reactor_id: id('The reactor run on each response, when it has one.').optional(),
  application_id: id('The application its transforms act as, when it has one.').optional(),
  require_auth: z.boolean().describe('Whether an invocation needs an API key besides the proxy key.'),
};

/**
 * A webhook without its URL (it may carry credentials in its query) or its notify_email (a
 * person's address).
 */
const webhook = {
  webhook_id: id('The webhook.'),
  tenant_id: tenantId,
  name: z.string().describe('The webhook name.'),
  events: z.array(z.string()).describe('The event types it is subscribed to.'),
  status: z.enum(['enabled', 'disabled']).describe('Whether deliveries are made.'),
};

/**
 * Every event type that may leave the service, by its event-store type. Adding an event type to
 * a context means adding its entry here (a unit test in packages/relay fails until then).
 */
export const publicEvents: Record<string, PublicEventContract> = {
  TokenCreated: contract({
    topic: 'tokens',
    description: 'A token was created. Its data never leaves the service: read it through the API.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.token_id}`,
    schema: z.object({
      token_id: id('The token id (unique within its tenant).'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type.'),
      containers: z.array(z.string()).describe('The containers the token is in.'),
      expires_at: at('When the token expires').optional(),
      parent_id: id('The parent token, when created as a child of one.').optional(),
      created_by: id('The application that created it.'),
      created_at: at('When'),
    }),
  }),
  TokenUpdated: contract({
    topic: 'tokens',
    description:
      'A token was updated (its data, metadata, containers or expiry). Neither its data nor its metadata leaves the service: read them through the API.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.token_id}`,
    schema: z.object({
      token_id: id('The token id.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type.'),
      containers: z.array(z.string()).describe('The containers the token is in after the update.'),
      expires_at: at('When the token expires after the update (absent: it does not)').optional(),
      modified_by: id('The application that updated it.'),
      modified_at: at('When'),
    }),
  }),
  TokenReencrypted: contract({
    topic: 'tokens',
    description:
      'A token’s data was sealed under a new token key and its old key destroyed (a key thought compromised). Neither ciphertext nor key is published.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.token_id}`,
    schema: z.object({
      token_id: id('The token id.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type.'),
      reencrypted_by: id('Who asked for it (an operator, as the system).'),
      reencrypted_at: at('When'),
    }),
  }),
  TokenCvcRemoved: contract({
    topic: 'tokens',
    description:
      'A card token’s CVC was removed from its data, CARD_CVC_TTL_SECONDS after it was given, and what the token derived from its data (search index values and claims, fingerprint, summaries) recomputed without it; metadata, containers and privacy are unchanged. Neither ciphertext, key nor anything derived from the data is published.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.token_id}`,
    schema: z.object({
      token_id: id('The token id.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type (card).'),
      removed_at: at('When'),
    }),
  }),
  TokenDeleted: contract({
    topic: 'tokens',
    description: 'A token was deleted.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.token_id}`,
    schema: z.object({
      token_id: id('The token id.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type.').optional(),
      parent_ids: z
        .array(z.string())
        .describe('The parents it was a child of (associations ended).')
        .optional(),
      child_ids: z
        .array(z.string())
        .describe('The children it was a parent of (associations ended).')
        .optional(),
      deleted_by: id('The application that deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  TokenIntentCreated: contract({
    topic: 'tokens',
    description:
      'A token intent was created: data checked and held sealed until it becomes a token, is deleted or expires (24 hours, or CARD_CVC_TTL_SECONDS when it holds a card’s CVC). Neither its data, its ciphertext, its summaries, its fingerprint nor its CVC’s time is published.',
    entity: 'token_intent',
    entityId: (data) => `${data.tenant_id}/${data.intent_id}`,
    schema: z.object({
      intent_id: id('The token intent.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type of its data.'),
      expires_at: at('When it expires, if not made a token before'),
      created_by: id('The application that created it.'),
      created_at: at('When'),
    }),
  }),
  TokenIntentConverted: contract({
    topic: 'tokens',
    description:
      'A token intent was made a token (POST /tokens with token_intent_id); its key was destroyed. The token’s own TokenCreated follows in the same commit.',
    entity: 'token_intent',
    entityId: (data) => `${data.tenant_id}/${data.intent_id}`,
    schema: z.object({
      intent_id: id('The token intent.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type.'),
      token_id: id('The token it became.'),
      converted_by: id('The application that made the token.'),
      converted_at: at('When'),
    }),
  }),
  TokenIntentDeleted: contract({
    topic: 'tokens',
    description: 'A token intent was deleted; its key was destroyed.',
    entity: 'token_intent',
    entityId: (data) => `${data.tenant_id}/${data.intent_id}`,
    schema: z.object({
      intent_id: id('The token intent.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type of its data.'),
      deleted_by: id('The application that deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  TokenIntentExpired: contract({
    topic: 'tokens',
    description:
      'A token intent expired before it was made a token or deleted; the expiry sweep destroyed its key.',
    entity: 'token_intent',
    entityId: (data) => `${data.tenant_id}/${data.intent_id}`,
    schema: z.object({
      intent_id: id('The token intent.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type of its data.'),
      expired_at: at('When the sweep expired it'),
    }),
  }),
  TenantCreated: contract({
    topic: 'tenancy',
    description: 'A tenant was created (with its owner).',
    entity: 'tenant',
    entityId: (data) => data.tenant_id,
    schema: z.object({
      tenant_id: tenantId,
      name: z.string().describe('The tenant name.'),
      owner_id: id('The user who owns the tenant.'),
      settings: z.record(z.string(), z.string()).describe('Tenant settings.'),
      created_by: id('Who created it.'),
      created_at: at('When'),
    }),
  }),
  TokenAssociated: contract({
    topic: 'tokens',
    description: 'A token became the child of another token. Keyed by the child (its stream).',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.child_id}`,
    schema: z.object({
      ...association,
      associated_by: id('Who associated them.'),
      associated_at: at('When'),
    }),
  }),
  TokenDissociated: contract({
    topic: 'tokens',
    description: 'A token stopped being the child of another token. Keyed by the child.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.child_id}`,
    schema: z.object({
      ...association,
      dissociated_by: id('Who dissociated them.'),
      dissociated_at: at('When'),
    }),
  }),
  TokenRead: contract({
    topic: 'audit',
    description:
      'A token’s data was read (revealed to a caller); in events written before TokensRead. The data itself is never published.',
    entity: 'token',
    entityId: (data) => `${data.tenant_id}/${data.token_id}`,
    schema: z.object({
      token_id: id('The token id.'),
      tenant_id: tenantId,
      type: tokenTypeSchema.describe('The token type.'),
      read_by: id('The application that read it.'),
      read_at: at('When'),
    }),
  }),
  TokensRead: contract({
    topic: 'audit',
    description:
      'One request read the data of these tokens (revealed to a caller). The data itself is never published. The service records the reads that commit together as one event (TokensReadBatch, never published as such): each of its reads is published as a TokensRead of its own tenant, with the CloudEvents id `<event id>/<index of the read>`.',
    entity: 'tenant',
    entityId: (data) => data.tenant_id,
    schema: z.object({
      tenant_id: tenantId,
      tokens: z
        .array(
          z.object({
            token_id: id('The token id.'),
            type: tokenTypeSchema.describe('The token type.'),
            transform: z
              .enum(['mask', 'redact'])
              .optional()
              .describe(
                'What the read showed when its access rule masked or redacted the data (absent: the data).',
              ),
          }),
        )
        .describe('The tokens read (at most 100).'),
      read_by: id('The application that read them.'),
      read_at: at('When'),
    }),
  }),
  TenantUpdated: contract({
    topic: 'tenancy',
    description: 'A tenant’s name or settings changed.',
    entity: 'tenant',
    entityId: (data) => data.tenant_id,
    schema: z.object({
      tenant_id: tenantId,
      name: z.string().describe('The tenant name.'),
      settings: z.record(z.string(), z.string()).describe('Tenant settings.'),
      modified_by: id('Who changed it.'),
      modified_at: at('When'),
    }),
  }),
  TenantKeyRotated: contract({
    topic: 'tenancy',
    description:
      'A tenant was given a new data key version (key rotation): it wraps the tenant’s token keys from then on; the versions before it are retired. No key material.',
    entity: 'tenant',
    entityId: (data) => data.tenant_id,
    schema: z.object({
      tenant_id: tenantId,
      version: z.number().int().describe('The new tenant key version.'),
      previous_version: z.number().int().describe('The version it replaces (retired).'),
      token_keys_rewrapped: z.number().int().describe('Token keys re-wrapped under the new version.'),
      rotated_at: at('When'),
    }),
  }),
  TenantKeyRewrapped: contract({
    topic: 'tenancy',
    description:
      'A version of a tenant’s keys was re-wrapped under another master key version (master key rotation). No key material.',
    entity: 'tenant',
    entityId: (data) => data.tenant_id,
    schema: z.object({
      tenant_id: tenantId,
      version: z.number().int().describe('The tenant key version re-wrapped.'),
      master_key_version: id('The master key version that wraps it now.'),
      previous_master_key_version: id('The one that wrapped it before.'),
      rewrapped_at: at('When'),
    }),
  }),
  TenantDeleted: contract({
    topic: 'tenancy',
    description: 'A tenant was deleted (its data key destroyed: its token data is unreadable).',
    entity: 'tenant',
    entityId: (data) => data.tenant_id,
    schema: z.object({
      tenant_id: tenantId,
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  UserRegistered: contract({
    topic: 'tenancy',
    description: 'A user was registered. Only the id is published: no e-mail address or name.',
    entity: 'user',
    entityId: (data) => data.user_id,
    schema: z.object({
      user_id: id('The user.'),
      created_at: at('When'),
    }),
  }),
  MemberAdded: contract({
    topic: 'tenancy',
    description: 'A user became a member of a tenant.',
    entity: 'member',
    entityId: (data) => `${data.tenant_id}/${data.member_id}`,
    schema: z.object({
      member_id: id('The member.'),
      tenant_id: tenantId,
      user_id: id('The user.'),
      role: z.enum(['OWNER', 'ADMIN']).describe('The member role.'),
      created_by: id('Who added the member.'),
      created_at: at('When'),
    }),
  }),
  ApplicationCreated: contract({
    topic: 'tenancy',
    description: 'An application (an API key holder) was created. Neither its key nor its hash is published.',
    entity: 'application',
    entityId: (data) => `${data.tenant_id}/${data.application_id}`,
    schema: z.object({
      application_id: id('The application.'),
      tenant_id: tenantId,
      name: z.string().describe('The application name.'),
      type: z.enum(applicationTypes).describe('The application type.'),
      permissions: z.array(permissionSchema).describe('Tenant-wide permissions.'),
      rules,
      rate_limit: rateLimit,
      created_by: id('Who created it.'),
      created_at: at('When'),
    }),
  }),
  ApplicationUpdated: contract({
    topic: 'tenancy',
    description: 'An application’s name or permissions changed.',
    entity: 'application',
    entityId: (data) => `${data.tenant_id}/${data.application_id}`,
    schema: z.object({
      application_id: id('The application.'),
      tenant_id: tenantId,
      name: z.string().describe('The application name.'),
      permissions: z.array(permissionSchema).describe('Tenant-wide permissions.'),
      rules,
      rate_limit: rateLimit,
      modified_by: id('Who changed it.'),
      modified_at: at('When'),
    }),
  }),
  ApplicationDeleted: contract({
    topic: 'tenancy',
    description: 'An application was deleted: its key no longer works.',
    entity: 'application',
    entityId: (data) => `${data.tenant_id}/${data.application_id}`,
    schema: z.object({
      application_id: id('The application.'),
      tenant_id: tenantId,
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  ApplicationKeyCreated: contract({
    topic: 'tenancy',
    description: 'An application got a new key. Neither the key nor its hash is published.',
    entity: 'application',
    entityId: (data) => `${data.tenant_id}/${data.application_id}`,
    schema: z.object({
      application_id: id('The application.'),
      tenant_id: tenantId,
      key_id: id('The key.'),
      expires_at: at('When the key stops working').optional(),
      created_by: id('Who created it.'),
      created_at: at('When'),
    }),
  }),
  ApplicationKeyDeleted: contract({
    topic: 'tenancy',
    description: 'An application’s key was deleted: it no longer works.',
    entity: 'application',
    entityId: (data) => `${data.tenant_id}/${data.application_id}`,
    schema: z.object({
      application_id: id('The application.'),
      tenant_id: tenantId,
      key_id: id('The key.'),
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  MemberRemoved: contract({
    topic: 'tenancy',
    description: 'A member was removed from a tenant: the user no longer has access to it.',
    entity: 'member',
    entityId: (data) => `${data.tenant_id}/${data.member_id}`,
    schema: z.object({
      member_id: id('The member.'),
      tenant_id: tenantId,
      user_id: id('The user.'),
      removed_by: id('Who removed the member.'),
      removed_at: at('When'),
    }),
  }),
  InvitationCreated: contract({
    topic: 'tenancy',
    description:
      'Someone was invited to a tenant. Neither the e-mail address nor the link (or its hash) is published.',
    entity: 'invitation',
    entityId: (data) => `${data.tenant_id}/${data.invitation_id}`,
    schema: z.object({
      invitation_id: id('The invitation.'),
      tenant_id: tenantId,
      link_version: z.number().int().describe('The version of its link (1, then one more per resend).'),
      expires_at: at('When it expires'),
      created_by: id('Who invited.'),
      created_at: at('When'),
    }),
  }),
  InvitationResent: contract({
    topic: 'tenancy',
    description:
      'An invitation was sent again with a new link (earlier links stopped working) and a new expiry.',
    entity: 'invitation',
    entityId: (data) => `${data.tenant_id}/${data.invitation_id}`,
    schema: z.object({
      invitation_id: id('The invitation.'),
      tenant_id: tenantId,
      link_version: z.number().int().describe('The version of its new link.'),
      expires_at: at('When it expires'),
      modified_by: id('Who resent it.'),
      modified_at: at('When'),
    }),
  }),
  InvitationDeleted: contract({
    topic: 'tenancy',
    description: 'An invitation was deleted: its links stopped working.',
    entity: 'invitation',
    entityId: (data) => `${data.tenant_id}/${data.invitation_id}`,
    schema: z.object({
      invitation_id: id('The invitation.'),
      tenant_id: tenantId,
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  InvitationAccepted: contract({
    topic: 'tenancy',
    description: 'An invitation was accepted: the member was added and the invitation removed.',
    entity: 'invitation',
    entityId: (data) => `${data.tenant_id}/${data.invitation_id}`,
    schema: z.object({
      invitation_id: id('The invitation.'),
      tenant_id: tenantId,
      member_id: id('The member it created.'),
      user_id: id('The user who accepted.'),
      accepted_at: at('When'),
    }),
  }),
  ReactorFormulaCreated: contract({
    topic: 'reactors',
    description: 'A reactor formula was created. Its code is never published.',
    entity: 'reactor_formula',
    entityId: (data) => `${data.tenant_id}/${data.formula_id}`,
    schema: z.object({ ...formula, created_by: id('Who created it.'), created_at: at('When') }),
  }),
  ReactorFormulaUpdated: contract({
    topic: 'reactors',
    description: 'A reactor formula was replaced (name, code, declarations). Its code is never published.',
    entity: 'reactor_formula',
    entityId: (data) => `${data.tenant_id}/${data.formula_id}`,
    schema: z.object({ ...formula, modified_by: id('Who changed it.'), modified_at: at('When') }),
  }),
  ReactorFormulaDeleted: contract({
    topic: 'reactors',
    description: 'A reactor formula was deleted (no reactor used it).',
    entity: 'reactor_formula',
    entityId: (data) => `${data.tenant_id}/${data.formula_id}`,
    schema: z.object({
      formula_id: id('The reactor formula.'),
      tenant_id: tenantId,
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  ReactorCreated: contract({
    topic: 'reactors',
    description: 'A reactor was created. Its configuration values are never published.',
    entity: 'reactor',
    entityId: (data) => `${data.tenant_id}/${data.reactor_id}`,
    schema: z.object({
      ...reactor,
      formula_id: id('The formula it runs.'),
      created_by: id('Who created it.'),
      created_at: at('When'),
    }),
  }),
  ReactorUpdated: contract({
    topic: 'reactors',
    description:
      'A reactor’s name, configuration or application changed. Configuration values are never published.',
    entity: 'reactor',
    entityId: (data) => `${data.tenant_id}/${data.reactor_id}`,
    schema: z.object({ ...reactor, modified_by: id('Who changed it.'), modified_at: at('When') }),
  }),
  ReactorDeleted: contract({
    topic: 'reactors',
    description: 'A reactor was deleted.',
    entity: 'reactor',
    entityId: (data) => `${data.tenant_id}/${data.reactor_id}`,
    schema: z.object({
      reactor_id: id('The reactor.'),
      tenant_id: tenantId,
      formula_id: id('The formula it ran.'),
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  ProxyCreated: contract({
    topic: 'proxies',
    description:
      'A pre-configured proxy was created. Its key, configuration, destination and transforms are never published.',
    entity: 'proxy',
    entityId: (data) => `${data.tenant_id}/${data.proxy_id}`,
    schema: z.object({ ...proxy, created_by: id('Who created it.'), created_at: at('When') }),
  }),
  ProxyUpdated: contract({
    topic: 'proxies',
    description:
      'A pre-configured proxy’s settings changed. Its key, configuration, destination and transforms are never published.',
    entity: 'proxy',
    entityId: (data) => `${data.tenant_id}/${data.proxy_id}`,
    schema: z.object({ ...proxy, modified_by: id('Who changed it.'), modified_at: at('When') }),
  }),
  ProxyDeleted: contract({
    topic: 'proxies',
    description: 'A pre-configured proxy was deleted: its key no longer invokes anything.',
    entity: 'proxy',
    entityId: (data) => `${data.tenant_id}/${data.proxy_id}`,
    schema: z.object({
      proxy_id: id('The proxy.'),
      tenant_id: tenantId,
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  WebhookCreated: contract({
    topic: 'webhooks',
    description: 'A webhook was created. Its URL and notify_email are never published.',
    entity: 'webhook',
    entityId: (data) => `${data.tenant_id}/${data.webhook_id}`,
    schema: z.object({ ...webhook, created_by: id('Who created it.'), created_at: at('When') }),
  }),
  WebhookUpdated: contract({
    topic: 'webhooks',
    description: 'A webhook’s settings or status changed. Its URL and notify_email are never published.',
    entity: 'webhook',
    entityId: (data) => `${data.tenant_id}/${data.webhook_id}`,
    schema: z.object({ ...webhook, modified_by: id('Who changed it.'), modified_at: at('When') }),
  }),
  WebhookDeleted: contract({
    topic: 'webhooks',
    description: 'A webhook was deleted: nothing more is delivered to it.',
    entity: 'webhook',
    entityId: (data) => `${data.tenant_id}/${data.webhook_id}`,
    schema: z.object({
      webhook_id: id('The webhook.'),
      tenant_id: tenantId,
      deleted_by: id('Who deleted it.'),
      deleted_at: at('When'),
    }),
  }),
  WebhookDisabled: contract({
    topic: 'webhooks',
    description:
      'A webhook was disabled by its deliveries: its receiver answered 410 (`gone`) or too many deliveries in a row failed (`failing`).',
    entity: 'webhook',
    entityId: (data) => `${data.tenant_id}/${data.webhook_id}`,
    schema: z.object({
      webhook_id: id('The webhook.'),
      tenant_id: tenantId,
      reason: z.enum(['gone', 'failing']).describe('Why.'),
      disabled_at: at('When'),
    }),
  }),
  WebhookSigningKeyRotated: contract({
    topic: 'webhooks',
    description: 'A tenant’s webhook signing key was made or replaced. The secret is never published.',
    entity: 'webhook_signing_key',
    entityId: (data) => `${data.tenant_id}/${data.key_id}`,
    schema: z.object({
      tenant_id: tenantId,
      key_id: id('The new key.'),
      previous_key_id: id(
        'The key it replaces, which signs beside it until previous_valid_until.',
      ).optional(),
      previous_valid_until: at('When the replaced key stops signing').optional(),
      rotated_by: id('Who made it.'),
      rotated_at: at('When'),
    }),
  }),
};

/**
 * Events that record the facts of several tenants at once: never published as they are, each is
 * published as the messages of its parts, one per fact (in the order it names them), each of one
 * tenant and shaped by the contract of its `type`. A TokensReadBatch is a TokensRead per read.
 */
export const publishedInParts: Record<
  string,
  (data: unknown) => { type: string; tenant_id: string; data: Record<string, unknown> }[]
> = {
  TokensReadBatch: (data) =>
    z
      .object({ reads: z.array(z.object({ tenant_id: z.string() }).loose()) })
      .parse(data)
      .reads.map((read) => ({ type: 'TokensRead', tenant_id: read.tenant_id, data: read })),
};
