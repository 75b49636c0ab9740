import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { fold } from '@tokenvault/cqrs';
import { domainErrorWith } from '@tokenvault/platform/testing';
import { proxyDecider, type ProxyCommand, type ProxyEvent } from './proxy.ts';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const actorId = '9d2f0a1e-0000-4000-8000-000000000003';
const proxyId = '9d2f0a1e-0000-4000-8000-000000000004';
const applicationId = '9d2f0a1e-0000-4000-8000-000000000005';
const reactorId = '9d2f0a1e-0000-4000-8000-000000000006';
const now = '2026-03-01T00:00:00.000Z';

// The command handler seals the configuration and the key before deciding: opaque strings here.
const settings = {
  name: 'Stripe',
  destination_url: 'https://api.example.com/v1',
  request_reactor_id: reactorId,
  request_transforms: [{ type: 'code' as const, code: 'module.exports = async (req) => req.args;' }],
  response_transforms: [],
  require_auth: true,
  timeout: 5,
};
const application = {
  id: applicationId,
  found: { id: applicationId, type: 'private' as const, permissions: ['token:create'], rules: [] },
};
const caller = { permissions: ['token:create', 'token:use', 'proxy:create'], rules: [] };
const target = { proxyId, tenantId, actorId, now };
const create: ProxyCommand = {
  type: 'CreateProxy',
  settings,
  configurationCiphertext: 'sealed:configuration',
  keyCiphertext: 'sealed:key',
  keyHash: 'hash',
  application,
  reactorsFound: [{ id: reactorId }],
  caller,
  ...target,
};
const created: ProxyEvent = {
  type: 'ProxyCreated',
  data: {
    proxy_id: proxyId,
    tenant_id: tenantId,
    name: 'Stripe',
    destination_url: 'https://api.example.com/v1',
    request_reactor_id: reactorId,
    request_transforms: settings.request_transforms,
    response_transforms: [],
    application_id: applicationId,
    configuration_ciphertext: 'sealed:configuration',
    key_ciphertext: 'sealed:key',
    key_hash: 'hash',
    require_auth: true,
    timeout: 5,
    created_by: actorId,
    created_at: now,
  },
};
const update: ProxyCommand = {
  type: 'UpdateProxy',
  settings: { ...settings, name: 'Renamed', require_auth: false, request_reactor_id: undefined },
  configurationCiphertext: 'sealed:again',
  reactorsFound: [],
  bound: { reactors: [] },
  caller,
  ...target,
};
const updated: ProxyEvent = {
  type: 'ProxyUpdated',
  data: {
    proxy_id: proxyId,
    tenant_id: tenantId,
    name: 'Renamed',
    destination_url: 'https://api.example.com/v1',
    request_transforms: settings.request_transforms,
    response_transforms: [],
    configuration_ciphertext: 'sealed:again',
    require_auth: false,
    timeout: 5,
    modified_by: actorId,
    modified_at: now,
  },
};
const deleted: ProxyEvent = {
  type: 'ProxyDeleted',
  data: { proxy_id: proxyId, tenant_id: tenantId, deleted_by: actorId, deleted_at: now },
};
const spec = deciderSpec(proxyDecider);

describe('proxy decider', () => {
  it('creates once', () => {
    spec.given([]).when(create).then([created]);
    spec.given([created]).when(create).thenThrows(domainErrorWith('already-exists'));
  });

  it('updates an active proxy only; an update keeps the key and drops what it leaves out', () => {
    spec.given([created]).when(update).then([updated]);
    spec.given([]).when(update).thenThrows(domainErrorWith('not-found'));
    spec.given([created, deleted]).when(update).thenThrows(domainErrorWith('not-found'));
    const state = fold(proxyDecider, [created, updated]);
    expect(state).toMatchObject({
      status: 'active',
      proxy: { key_hash: 'hash', key_ciphertext: 'sealed:key' },
    });
    if (state.status !== 'active') throw new Error('not active');
    expect(state.proxy.request_reactor_id).toBeUndefined();
    expect(state.proxy.application_id).toBeUndefined();
  });

  it('deletes once, for a key holding what the proxy runs (else not allowed, naming path.id)', () => {
    const remove: ProxyCommand = {
      type: 'DeleteProxy',
      caller,
      bound: { application: application.found, reactors: [] },
      ...target,
    };
    spec.given([created]).when(remove).then([deleted]);
    spec.given([created, deleted]).when(remove).thenThrows(domainErrorWith('not-found'));
    spec.given([]).when(remove).thenThrows(domainErrorWith('not-found'));
    const greater = { ...application.found, permissions: ['token:read'] };
    spec
      .given([created])
      .when({ ...remove, bound: { application: greater, reactors: [] } })
      .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
  });

  it('refuses a reactor that is not one of the tenant’s (invalid, naming the field)', () => {
    spec
      .given([])
      .when({ ...create, reactorsFound: [] })
      .thenThrows(domainErrorWith('invalid', { field: 'body.request_reactor_id' }));
    spec
      .given([])
      .when({ ...create, settings: { ...settings, response_reactor_id: applicationId } })
      .thenThrows(domainErrorWith('invalid', { field: 'body.response_reactor_id' }));
  });

  it('refuses a missing or management application (invalid) and one holding more than the caller (not allowed)', () => {
    spec
      .given([])
      .when({ ...create, application: { id: applicationId, found: undefined } })
      .thenThrows(domainErrorWith('invalid', { field: 'body.application.id' }));
    spec
      .given([])
      .when({
        ...create,
        application: { id: applicationId, found: { ...application.found, type: 'management' } },
      })
      .thenThrows(domainErrorWith('invalid', { field: 'body.application.id' }));
    spec
      .given([])
      .when({
        ...create,
        application: { id: applicationId, found: { ...application.found, permissions: ['token:read'] } },
      })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.application.id' }));
  });

  describe('binding a reactor: whoever calls the proxy runs it, as its application', () => {
    const reactorApplicationId = '9d2f0a1e-0000-4000-8000-000000000007';
    const reactorRunningAs = (permissions: string[]) => ({
      id: reactorId,
      application: { id: reactorApplicationId, type: 'private' as const, permissions, rules: [] },
    });
    const lowKey = { permissions: ['proxy:create', 'proxy:update', 'token:create'], rules: [] };
    const withoutAuth = { ...settings, require_auth: false };

    it('needs token:use, as invoking the reactor does (not allowed, naming the field)', () => {
      spec
        .given([])
        .when({ ...create, settings: withoutAuth, caller: lowKey })
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.request_reactor_id' }));
      spec
        .given([])
        .when({
          ...create,
          settings: { ...withoutAuth, request_reactor_id: undefined, response_reactor_id: reactorId },
          caller: lowKey,
        })
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.response_reactor_id' }));
      // token:use through a container rule is what the react route asks for, too.
      const ruled = { ...lowKey, rules: [{ container: '/pci/', permissions: ['token:use'] }] };
      spec
        .given([])
        .when({ ...create, caller: ruled })
        .then([created]);
    });

    it('refuses a reactor whose application holds more than the caller (not allowed), binds one holding the same', () => {
      spec
        .given([])
        .when({ ...create, reactorsFound: [reactorRunningAs(['token:read'])] })
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.request_reactor_id' }));
      spec
        .given([])
        .when({ ...create, reactorsFound: [reactorRunningAs(['token:use', 'token:create'])] })
        .then([created]);
    });

    it('re-decides a reactor the proxy keeps: an update by a key that could not bind it is refused', () => {
      // What a PATCH of the name alone decides on: the settings merged with the bound reactor.
      const keepsReactor: ProxyCommand = {
        ...update,
        settings: { ...settings, name: 'Renamed' },
        reactorsFound: [reactorRunningAs(['token:read'])],
      };
      spec
        .given([created])
        .when({ ...keepsReactor, caller: { ...caller, permissions: [...caller.permissions, 'token:read'] } })
        .then([{ ...updated, data: { ...updated.data, require_auth: true, request_reactor_id: reactorId } }]);
      spec
        .given([created])
        .when(keepsReactor)
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.request_reactor_id' }));
      spec
        .given([created])
        .when({ ...keepsReactor, reactorsFound: [{ id: reactorId }], caller: lowKey })
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.request_reactor_id' }));
    });
    it('refuses any change, an unbinding too, by a key that could not bind what the proxy runs now (not allowed, naming path.id)', () => {
      // The update unbinds both (no reactor, no application); the proxy ran them before.
      const unbinds = (bound: Extract<ProxyCommand, { type: 'UpdateProxy' }>['bound']): ProxyCommand => ({
        ...update,
        bound,
      });
      const greater = { id: applicationId, type: 'private' as const, permissions: ['token:read'], rules: [] };
      spec
        .given([created])
        .when(unbinds({ application: greater, reactors: [] }))
        .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
      spec
        .given([created])
        .when(unbinds({ reactors: [reactorRunningAs(['token:read'])] }))
        .thenThrows(domainErrorWith('not-allowed', { field: 'path.id' }));
      // What it holds itself, it may unbind.
      spec
        .given([created])
        .when(unbinds({ application: application.found, reactors: [reactorRunningAs(['token:use'])] }))
        .then([updated]);
    });
  });

  it('an expiring key neither creates a proxy without auth nor turns auth off: its proxy key would outlive it (not allowed, naming body.require_auth)', () => {
    const expiring = { callerKeyExpiresAt: '2026-03-01T00:00:05.000Z' };
    const withoutAuth = { ...settings, require_auth: false };
    spec
      .given([])
      .when({ ...create, settings: withoutAuth, ...expiring })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.require_auth' }));
    spec
      .given([created])
      .when({ ...update, settings: { ...update.settings, require_auth: false }, ...expiring })
      .thenThrows(domainErrorWith('not-allowed', { field: 'body.require_auth' }));
    // With auth, every call needs an API key of its own: the proxy key alone outlives nothing.
    spec
      .given([])
      .when({ ...create, ...expiring })
      .then([created]);
    // A proxy already without auth (made by a key that does not expire) stays changeable.
    const withoutAuthCreated = { ...created, data: { ...created.data, require_auth: false } } as ProxyEvent;
    spec
      .given([withoutAuthCreated])
      .when({ ...update, ...expiring })
      .then([updated]);
  });

  it('puts only sealed secrets in its events', () => {
    const events = proxyDecider.decide(create, proxyDecider.initialState());
    const written = JSON.stringify(events);
    expect(written).not.toMatch(/"configuration"|"key"/);
  });
});
