import { describe, expect, it } from 'vitest';
import { problemRejectedBy } from '@tokenvault/platform/testing';
import { AddressAllowlist, embeddedIpv4, ipv6Bytes, nonPublicKind } from './addresses.ts';
import { resolveDestination, type Resolver } from './resolve.ts';

/** The first and the last address of a range (`a.b.c.d/n` or `x:…/n`). */
function ends(range: string): [string, string] {
  const [network = '', prefix = ''] = range.split('/');
  const bits = Number(prefix);
  if (!network.includes(':')) {
    const value = network.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
    const size = 2 ** (32 - bits);
    const text = (n: number) => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
    return [text(value), text(value - (value % size) + size - 1)];
  }
  const bytes = ipv6Bytes(network)!;
  const last = bytes.map((byte, index) => {
    const hostBits = Math.min(8, Math.max(0, (index + 1) * 8 - bits));
    return byte | ((1 << hostBits) - 1);
  });
  const text = (values: number[]) =>
    Array.from({ length: 8 }, (_, group) =>
      ((values[2 * group]! << 8) | values[2 * group + 1]!).toString(16),
    ).join(':');
  return [text(bytes), text(last)];
}

/**
 * Every range of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2025), its
 * verdict (the kind a refusal names; every one is refused unless allow-listed) and why. Ranges the
 * registries mark globally reachable are refused too: anycast services whose nearest instance is
 * often the network's own, or identifiers that are not locators; no card goes to them.
 */
const specialPurpose: [range: string, kind: string, why: string, last?: string][] = [
  ['0.0.0.0/8', 'unspecified', '"this network": the host itself on many stacks'],
  ['10.0.0.0/8', 'private', 'RFC 1918: internal networks'],
  ['100.64.0.0/10', 'CGNAT', 'shared address space: the provider’s side of a carrier NAT'],
  ['127.0.0.0/8', 'loopback', 'the service’s own host'],
  ['169.254.0.0/16', 'link-local', 'cloud metadata (169.254.169.254) and other link-local services'],
  ['172.16.0.0/12', 'private', 'RFC 1918: internal networks'],
  ['192.0.0.0/24', 'reserved', 'IETF protocol assignments: not globally reachable'],
  [
    '192.0.0.9/32',
    'reserved',
    'PCP anycast: globally reachable, but the nearest PCP server is the network’s own gateway',
  ],
  [
    '192.0.0.10/32',
    'reserved',
    'TURN anycast: globally reachable, but reaches the nearest (the network’s own) relay',
  ],
  ['192.0.2.0/24', 'documentation', 'TEST-NET-1: never a real host'],
  ['192.31.196.0/24', 'AS112', 'AS112 DNS sinks: anycast, often run inside the operator’s network'],
  ['192.52.193.0/24', 'AMT', 'AMT relay anycast: the nearest relay, often the network’s own'],
  ['192.88.99.0/24', 'reserved', 'deprecated 6to4 relay anycast'],
  ['192.168.0.0/16', 'private', 'RFC 1918: internal networks'],
  ['192.175.48.0/24', 'AS112', 'AS112 direct delegation DNS sinks: anycast'],
  ['198.18.0.0/15', 'reserved', 'benchmarking: lab networks, not globally reachable'],
  ['198.51.100.0/24', 'documentation', 'TEST-NET-2: never a real host'],
  ['203.0.113.0/24', 'documentation', 'TEST-NET-3: never a real host'],
  ['240.0.0.0/4', 'reserved', 'reserved for future use: not globally reachable', '255.255.255.254'],
  ['255.255.255.255/32', 'broadcast', 'limited broadcast: every host of the local link'],
  ['::1/128', 'loopback', 'the service’s own host'],
  ['::/128', 'unspecified', 'the host itself on many stacks'],
  [
    '64:ff9b:1::/48',
    'NAT64 local-use',
    'RFC 8215: the local translator maps it as the network decides, internal IPv4 included',
  ],
  ['100::/64', 'reserved', 'discard-only: never answered'],
  ['100:0:0:1::/64', 'dummy IPv6 prefix', 'RFC 9780: a placeholder, not globally reachable'],
  ['2001::/23', 'reserved', 'IETF protocol assignments: not globally reachable as a whole'],
  ['2001::/32', 'reserved', 'Teredo: a tunnel whose relay and client addresses the caller picks'],
  [
    '2001:1::1/128',
    'reserved',
    'PCP anycast: globally reachable, but the nearest PCP server is the network’s own',
  ],
  ['2001:1::2/128', 'reserved', 'TURN anycast: globally reachable, but reaches the nearest relay'],
  ['2001:1::3/128', 'reserved', 'DNS-SD service registration anycast: the network’s own registrar'],
  ['2001:2::/48', 'reserved', 'benchmarking: lab networks'],
  ['2001:3::/32', 'reserved', 'AMT: anycast relays'],
  ['2001:4:112::/48', 'reserved', 'AS112-v6 DNS sinks: anycast'],
  ['2001:20::/28', 'reserved', 'ORCHIDv2: identifiers, not locators'],
  ['2001:30::/28', 'reserved', 'DRIP entity tags: identifiers, not locators'],
  ['2001:db8::/32', 'documentation', 'never a real host'],
  ['2620:4f:8000::/48', 'AS112', 'AS112 direct delegation DNS sinks: anycast'],
  ['3fff::/20', 'documentation', 'RFC 9637: never a real host'],
  ['5f00::/16', 'SRv6 SID', 'RFC 9602: segment identifiers inside an operator’s domain'],
  ['fc00::/7', 'unique-local', 'internal networks'],
  ['fe80::/10', 'link-local', 'the local link'],
];

/**
 * The registries' ranges that carry an IPv4 address: judged as that IPv4 address, so a private
 * one is refused and a public one is not (the translator or relay sends it there).
 */
const carryingIpv4: [range: string, carriesPrivate: string, carriesPublic: string][] = [
  ['::ffff:0:0/96 (IPv4-mapped)', '::ffff:10.0.0.1', '::ffff:8.8.8.8'],
  ['64:ff9b::/96 (NAT64 well-known prefix)', '64:ff9b::a9fe:a9fe', '64:ff9b::808:808'],
  ['2002::/16 (6to4)', '2002:c0a8:101::1', '2002:808:808::1'],
];

describe('the IANA special-purpose address registries', () => {
  it.each(specialPurpose)('%s is refused as %s (%s), first to last address', (range, kind, _why, lastOf) => {
    // The last address of 240.0.0.0/4 is the broadcast address, a row of its own.
    const [first, last] = lastOf ? [ends(range)[0], lastOf] : ends(range);
    expect(nonPublicKind(first)).toBe(kind);
    expect(nonPublicKind(last)).toBe(kind);
  });

  it.each(carryingIpv4)(
    '%s is judged by the IPv4 address it carries',
    (_range, carriesPrivate, carriesPublic) => {
      expect(nonPublicKind(carriesPrivate)).toBeDefined();
      expect(nonPublicKind(carriesPublic)).toBeUndefined();
    },
  );

  it('the local-use NAT64 prefix is refused whatever IPv4 address it carries (RFC 6052 /48 layout)', () => {
    // 8.8.8.8 in the /48 layout: bits 48-63, the u octet skipped, bits 72-87.
    expect(nonPublicKind('64:ff9b:1:808:8:800::')).toBe('NAT64 local-use');
    expect(nonPublicKind('64:ff9b:1::a9fe:a9fe')).toBe('NAT64 local-use');
    expect(embeddedIpv4('64:ff9b:1:808:8:800::')).toBeUndefined();
  });

  it('refuses IPv6 outside the global unicast space 2000::/3 (reserved by the IETF)', () => {
    for (const address of ['::2', '4000::1', '8000::1', 'e000::1', 'fe00::1']) {
      expect(nonPublicKind(address), address).toBe('reserved');
    }
  });
});

describe('addresses a proxied request may not reach', () => {
  it.each([
    ['0.1.2.3', 'unspecified'],
    ['10.255.255.255', 'private'],
    ['100.127.255.254', 'CGNAT'],
    ['127.0.0.2', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['192.0.0.8', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
  ])('IPv4 %s is %s', (address, kind) => {
    expect(nonPublicKind(address)).toBe(kind);
  });

  it.each([
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    // IPv6 forms carrying an IPv4 address are judged by it
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['::10.0.0.1', 'private'],
    ['64:ff9b::192.168.0.1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'],
  ])('IPv6 %s is %s', (address, kind) => {
    expect(nonPublicKind(address)).toBe(kind);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '192.0.1.255',
    '192.31.197.1',
    '2606:4700::1111',
    '2001:200::1',
    '2620:4f:8001::1',
    '3fff:1000::1',
    '::ffff:8.8.8.8',
    '2002:0808:0808::',
  ])('%s is public', (address) => {
    expect(nonPublicKind(address)).toBeUndefined();
  });

  it('a host name is not an address', () => {
    expect(nonPublicKind('localhost')).toBe('not an IP address');
  });

  it('reads the IPv4 address of mapped, compatible, NAT64 and 6to4 forms', () => {
    expect(embeddedIpv4('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(embeddedIpv4('::ffff:102:304')).toBe('1.2.3.4');
    expect(embeddedIpv4('64:ff9b::1.2.3.4')).toBe('1.2.3.4');
    expect(embeddedIpv4('2002:102:304::5')).toBe('1.2.3.4');
    expect(embeddedIpv4('2606:4700::1111')).toBeUndefined();
    expect(embeddedIpv4('::1')).toBeUndefined();
  });
});

describe('the operator’s allowlist', () => {
  it('admits listed addresses and CIDRs, IPv4 also in its IPv6 forms, nothing else', () => {
    const allowlist = new AddressAllowlist(' 127.0.0.1, 10.1.0.0/16 ,fd00::/8');
    expect(allowlist.has('127.0.0.1')).toBe(true);
    expect(allowlist.has('::ffff:127.0.0.1')).toBe(true);
    expect(allowlist.has('127.0.0.2')).toBe(false);
    expect(allowlist.has('10.1.200.3')).toBe(true);
    expect(allowlist.has('10.2.0.1')).toBe(false);
    expect(allowlist.has('fd00::5')).toBe(true);
    expect(allowlist.has('fe80::1')).toBe(false);
    expect(new AddressAllowlist('').has('127.0.0.1')).toBe(false);
  });

  it('admits a local-use NAT64 address only when the IPv6 address or prefix itself is listed', () => {
    expect(new AddressAllowlist('169.254.0.0/16').has('64:ff9b:1::a9fe:a9fe')).toBe(false);
    expect(new AddressAllowlist('64:ff9b:1::/48').has('64:ff9b:1::a9fe:a9fe')).toBe(true);
  });
});

describe('resolving a destination', () => {
  const none = new AddressAllowlist('');
  const resolverOf = (...answers: string[][]): Resolver & { calls: number } => {
    const resolver = Object.assign(
      async () => {
        const answer = answers[Math.min(resolver.calls, answers.length - 1)]!;
        resolver.calls++;
        return answer.map((address) => ({
          address,
          family: address.includes(':') ? (6 as const) : (4 as const),
        }));
      },
      { calls: 0 },
    );
    return resolver;
  };

  it('resolves once and pins the public address: a second, private answer is never asked for', async () => {
    const resolver = resolverOf(['93.184.216.34'], ['127.0.0.1']);
    const destination = await resolveDestination(
      new URL('https://rebind.example/pay'),
      { allowlist: none, resolver },
      'h',
    );
    expect(destination).toMatchObject({ address: '93.184.216.34', family: 4 });
    expect(resolver.calls).toBe(1);
  });

  it('refuses a name with any private address among its answers (public first, private next)', async () => {
    const resolver = resolverOf(['93.184.216.34', '10.0.0.5']);
    const problem = await problemRejectedBy(() =>
      resolveDestination(new URL('https://mixed.example/'), { allowlist: none, resolver }, 'SVC-PROXY-URL'),
    );
    expect(problem.status).toBe(400);
    expect(problem.errors).toEqual({
      'SVC-PROXY-URL': ['Resolves to a private address, which is not allowed'],
    });
  });

  it('refuses IP literals in private ranges, IPv6 in brackets included', async () => {
    const resolver = resolverOf(['93.184.216.34']);
    for (const url of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://[::ffff:169.254.169.254]/',
      'https://169.254.169.254/',
    ]) {
      expect(
        (await problemRejectedBy(() => resolveDestination(new URL(url), { allowlist: none, resolver }, 'u')))
          .status,
      ).toBe(400);
    }
    expect(resolver.calls).toBe(0);
  });

  it('https only, unless the address is on the allowlist; never other schemes or credentials', async () => {
    const resolver = resolverOf(['93.184.216.34']);
    const plain = await problemRejectedBy(() =>
      resolveDestination(new URL('http://public.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(plain.errors).toEqual({ u: ['Must be an https URL'] });
    const ftp = await problemRejectedBy(() =>
      resolveDestination(new URL('ftp://public.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(ftp.errors).toEqual({ u: ['Must be an https URL'] });
    const credentials = await problemRejectedBy(() =>
      resolveDestination(new URL('https://a:b@public.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(credentials.errors).toEqual({ u: ['Must not carry credentials'] });
    const allowlist = new AddressAllowlist('127.0.0.1');
    await expect(
      resolveDestination(new URL('http://127.0.0.1:8080/x'), { allowlist, resolver }, 'u'),
    ).resolves.toMatchObject({
      address: '127.0.0.1',
    });
  });

  it('a name that does not resolve is a 400', async () => {
    const resolver: Resolver = async () => {
      throw new Error('ENOTFOUND');
    };
    const problem = await problemRejectedBy(() =>
      resolveDestination(new URL('https://nowhere.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(problem.errors).toEqual({ u: ['The host name does not resolve'] });
  });
});
