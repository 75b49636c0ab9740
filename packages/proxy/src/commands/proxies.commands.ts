import { randomBytes, randomUUID } from 'node:crypto';
import {
  aggregateStream,
  commandContext,
  commandHandler,
  type CommandHandler,
  type CommandOutcome,
} from '@tokenvault/cqrs';
import type { EventStore } from '@tokenvault/eventstore';
import type { Clock, Principal } from '@tokenvault/platform';
import type { PatchProxyBody, ProxyBody } from '@tokenvault/contracts';
import { activeReactor, type BoundReactor } from '@tokenvault/reactors';
import type { ApplicationQueries } from '@tokenvault/tenancy';
import type { Vault } from '@tokenvault/vault';
import {
  AddressAllowlist,
  resolveDestination,
  systemResolver,
  type Resolver,
} from '@tokenvault/destinations';
import { configurationSubject, keySubject, streams } from '../domain/proxy.events.ts';
import {
  proxyDecider,
  proxyMissing,
  type ProxyCommand,
  type ProxyEvent,
  type ProxySettings,
  type ProxyState,
  type ProxyView,
} from '../domain/proxy.ts';
import type { ProxyConfiguration } from '../queries/configured-proxy.queries.ts';
import { proxyKeyHash, type ProxyRow } from '../queries/proxies.queries.ts';
import { destinationUrl } from '../request/forwarding.ts';

export interface ProxyCommandDeps {
  store: EventStore;
  applications: Pick<ApplicationQueries, 'getMany'>;
  /** Seals each configuration and key under the tenant's data key before it is decided on. */
  vault: Pick<Vault, 'encrypt'>;
  clock: Clock;
  /** Admits internal destinations (PROXY_ALLOWED_PRIVATE_ADDRESSES). */
  allowlist: AddressAllowlist;
  /** How destination names are resolved (tests give their own). */
  resolver?: Resolver;
}

const destinationField = 'body.destination_url';

const callerGrants = (principal: Principal) => ({
  permissions: [...principal.permissions],
  rules: principal.rules,
});

/** The read model's shape of a decided proxy: one way to open it into a response. */
export const rowOf = (proxy: ProxyView): ProxyRow => ({
  id: proxy.id,
  tenant_id: proxy.tenant_id,
  name: proxy.name,
  destination_url: proxy.destination_url,
  request_reactor_id: proxy.request_reactor_id ?? null,
  response_reactor_id: proxy.response_reactor_id ?? null,
  request_transforms: proxy.request_transforms,
  response_transforms: proxy.response_transforms,
  application_id: proxy.application_id ?? null,
  configuration_ciphertext: proxy.configuration_ciphertext,
  key_ciphertext: proxy.key_ciphertext,
  require_auth: proxy.require_auth,
  timeout_seconds: proxy.timeout ?? null,
  created_by: proxy.created_by,
  created_at: new Date(proxy.created_at),
  modified_by: proxy.modified_by ?? null,
  modified_at: proxy.modified_at ? new Date(proxy.modified_at) : null,
});

export class ProxyCommands {
  private readonly deps: ProxyCommandDeps;
  private readonly handle: CommandHandler<ProxyState, ProxyCommand, ProxyEvent>;

  constructor(deps: ProxyCommandDeps) {
    this.deps = deps;
    this.handle = commandHandler(deps.store, proxyDecider, (command) =>
      streams.proxy(command.tenantId, command.proxyId),
    );
  }

  /** The destination rules, before anything is decided: https unless allow-listed, public addresses. */
  private async checkDestination(destination: string): Promise<void> {
    await resolveDestination(
      destinationUrl(destination, '', '', destinationField),
      { allowlist: this.deps.allowlist, resolver: this.deps.resolver ?? systemResolver },
      destinationField,
    );
  }

  private async application(tenantId: string, id: string | undefined) {
    if (id === undefined) return undefined;
    const [found] = await this.deps.applications.getMany(tenantId, [id]);
    return { id, found };
  }

  /**
   * The reactors named that are active reactors of the tenant (from their own streams), each with
   * the application it runs as (tenancy's view of it: what the caller must hold to bind it).
   */
  private async reactorsFound(
    tenantId: string,
    settings: Pick<ProxySettings, 'request_reactor_id' | 'response_reactor_id'>,
  ): Promise<BoundReactor[]> {
    const ids = [settings.request_reactor_id, settings.response_reactor_id].flatMap((id) => (id ? [id] : []));
    const active = (await Promise.all(ids.map((id) => activeReactor(this.deps.store, tenantId, id)))).flatMap(
      (reactor) => (reactor ? [reactor] : []),
    );
    const applicationIds = active.flatMap((reactor) => reactor.application_id ?? []);
    const applications = await this.deps.applications.getMany(tenantId, [...new Set(applicationIds)]);
    return active.map((reactor) => {
      const application = applications.find((found) => found.id === reactor.application_id);
      return { id: reactor.id, ...(application ? { application } : {}) };
    });
  }

  /** What the proxy runs now (its application, if not gone, and its reactors): an update needs what they hold. */
  private async bound(tenantId: string, current: ProxyView) {
    const [application, reactors] = await Promise.all([
      this.application(tenantId, current.application_id),
      this.reactorsFound(tenantId, current),
    ]);
    return { ...(application?.found ? { application: application.found } : {}), reactors };
  }

  private seal(tenantId: string, proxyId: string, configuration: ProxyConfiguration) {
    return this.deps.vault.encrypt(tenantId, configurationSubject(proxyId), configuration);
  }

  private decided(outcome: CommandOutcome<ProxyState, ProxyEvent>): ProxyRow {
    if (outcome.state.status !== 'active') throw new Error('the proxy is not active after the command');
    return rowOf(outcome.state.proxy);
  }

  private async decide(
    principal: Principal,
    proxyId: string,
    settings: ProxySettings,
    applicationId: string | undefined,
    configurationCiphertext: string,
    correlationId: string,
    write: { create: { keyCiphertext: string; keyHash: string } } | { current: ProxyView },
  ) {
    const tenantId = principal.tenantId;
    await this.checkDestination(settings.destination_url);
    const create = 'create' in write ? write.create : undefined;
    const current = 'current' in write ? write.current : undefined;
    const [application, reactorsFound, bound] = await Promise.all([
      this.application(tenantId, applicationId),
      this.reactorsFound(tenantId, settings),
      current && this.bound(tenantId, current),
    ]);
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const decision = {
      proxyId,
      settings,
      configurationCiphertext,
      ...(application ? { application } : {}),
      reactorsFound,
      caller: callerGrants(principal),
      ...(principal.keyExpiresAt === undefined ? {} : { callerKeyExpiresAt: principal.keyExpiresAt }),
      ...acting,
    };
    const outcome = await this.handle(
      create
        ? { type: 'CreateProxy', ...create, ...decision }
        : { type: 'UpdateProxy', bound: bound ?? { reactors: [] }, ...decision },
      metadata,
      create ? { newStream: true } : {},
    );
    return { row: this.decided(outcome), position: outcome.position };
  }

  async create(principal: Principal, body: ProxyBody, correlationId: string) {
    const tenantId = principal.tenantId;
    const proxyId = randomUUID();
    // 256 random bits: unguessable, and unique in practice (the read model's key is its hash).
    const key = randomBytes(32).toString('base64url');
    const [configurationCiphertext, keyCiphertext] = await Promise.all([
      this.seal(tenantId, proxyId, body.configuration),
      this.deps.vault.encrypt(tenantId, keySubject(proxyId), key),
    ]);
    return this.decide(
      principal,
      proxyId,
      settingsOf(body),
      body.application?.id,
      configurationCiphertext,
      correlationId,
      { create: { keyCiphertext, keyHash: proxyKeyHash(key) } },
    );
  }

  async update(principal: Principal, proxyId: string, body: ProxyBody, correlationId: string) {
    const current = await this.current(principal.tenantId, proxyId);
    return this.decide(
      principal,
      proxyId,
      settingsOf(body),
      body.application?.id,
      await this.seal(principal.tenantId, proxyId, body.configuration),
      correlationId,
      { current },
    );
  }

  /** The fields named change; `null` removes an optional one; the others stay as they are. */
  async patch(principal: Principal, proxyId: string, body: PatchProxyBody, correlationId: string) {
    const current = await this.current(principal.tenantId, proxyId);
    const kept = <T>(patched: T | null | undefined, was: T | undefined): T | undefined =>
      patched === null ? undefined : (patched ?? was);
    const settings: ProxySettings = {
      name: body.name ?? current.name,
      destination_url: body.destination_url ?? current.destination_url,
      request_transforms: body.request_transforms ?? current.request_transforms,
      response_transforms: body.response_transforms ?? current.response_transforms,
      require_auth: body.require_auth ?? current.require_auth,
    };
    const requestReactor = kept(body.request_reactor_id, current.request_reactor_id);
    const responseReactor = kept(body.response_reactor_id, current.response_reactor_id);
    const timeout = kept(body.timeout, current.timeout);
    if (requestReactor !== undefined) settings.request_reactor_id = requestReactor;
    if (responseReactor !== undefined) settings.response_reactor_id = responseReactor;
    if (timeout !== undefined) settings.timeout = timeout;
    return this.decide(
      principal,
      proxyId,
      settings,
      body.application === null ? undefined : (body.application?.id ?? current.application_id),
      body.configuration
        ? await this.seal(principal.tenantId, proxyId, body.configuration)
        : current.configuration_ciphertext,
      correlationId,
      { current },
    );
  }

  async delete(principal: Principal, proxyId: string, correlationId: string) {
    const bound = await this.bound(principal.tenantId, await this.current(principal.tenantId, proxyId));
    const { acting, metadata } = commandContext(principal, correlationId, this.deps.clock);
    const outcome = await this.handle(
      { type: 'DeleteProxy', proxyId, caller: callerGrants(principal), bound, ...acting },
      metadata,
    );
    return { position: outcome.position };
  }

  /** A 404 before any destination is resolved, for a proxy that is not there. */
  private async current(tenantId: string, proxyId: string): Promise<ProxyView> {
    const { state } = await aggregateStream(this.deps.store, streams.proxy(tenantId, proxyId), proxyDecider);
    if (state.status !== 'active') throw proxyMissing();
    return state.proxy;
  }
}

const settingsOf = (body: ProxyBody): ProxySettings => ({
  name: body.name,
  destination_url: body.destination_url,
  ...(body.request_reactor_id === undefined ? {} : { request_reactor_id: body.request_reactor_id }),
  ...(body.response_reactor_id === undefined ? {} : { response_reactor_id: body.response_reactor_id }),
  request_transforms: body.request_transforms,
  response_transforms: body.response_transforms,
  require_auth: body.require_auth,
  ...(body.timeout === undefined ? {} : { timeout: body.timeout }),
});
