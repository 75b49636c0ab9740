// A tenant points the proxy at addresses that only look public: the local-use NAT64 prefix
// (64:ff9b:1::/48, RFC 8215), which a network's own translator maps to internal IPv4 addresses,
// and the special-purpose ranges the IANA registries added lately. Each is refused before any
// connection (400 naming the field), for an ephemeral call and when a proxy is saved.
import { describe, expect, it } from 'vitest';
import { useStack } from '../support/stack.ts';

const notPublic: [string, string][] = [
  ['https://[64:ff9b:1::a9fe:a9fe]/latest/meta-data', 'NAT64 local-use'],
  ['https://[64:ff9b:1:a00:1::]/', 'NAT64 local-use'],
  ['https://[100:0:0:1::1]/', 'dummy IPv6 prefix'],
  ['https://[3fff::1]/', 'documentation'],
  ['https://[5f00::1]/', 'SRv6 SID'],
  ['https://[2620:4f:8000::1]/', 'AS112'],
  ['https://192.31.196.1/', 'AS112'],
  ['https://192.175.48.1/', 'AS112'],
  ['https://192.52.193.1/', 'AMT'],
];

describe('attack: a proxy destination that only looks public', () => {
  const env = useStack({ PROXY_TIMEOUT_MS: '1000' });

  for (const [url, kind] of notPublic) {
    it(`${url} is refused as ${kind}, before any connection`, async () => {
      const ephemeral = await fetch(`${env.stack.url}/proxy/x`, {
        headers: { 'svc-api-key': env.tenant.apiKey, 'svc-proxy-url': url },
      });
      expect(ephemeral.status, await ephemeral.clone().text()).toBe(400);
      expect(((await ephemeral.json()) as { errors: unknown }).errors).toEqual({
        'SVC-PROXY-URL': [
          `Resolves to a ${kind} address, which is not allowed unless the operator lists it in PROXY_ALLOWED_PRIVATE_ADDRESSES`,
        ],
      });
      const saved = await env.tenant.client.request<{ errors: unknown }>('POST', '/proxies', {
        body: { name: 'Looks public', destination_url: url },
      });
      expect(saved.status).toBe(400);
      expect(saved.body.errors).toEqual({
        'body.destination_url': [
          `Resolves to a ${kind} address, which is not allowed unless the operator lists it in PROXY_ALLOWED_PRIVATE_ADDRESSES`,
        ],
      });
    });
  }
});
