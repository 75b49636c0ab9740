import { describe, expect, it } from 'vitest';
import { problemOfAsync } from '@tokenvault/platform/testing';
import { AddressAllowlist, embeddedIpv4, nonPublicKind } from './addresses.ts';
import { resolveDestination, type Resolver } from './resolve.ts';

describe('addresses a proxied request may not reach', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.0.0.2', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
  ])('IPv4 %s is %s', (address, kind) => {
    expect(nonPublicKind(address)).toBe(kind);
  });

  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['100::1', 'reserved'],
    // IPv6 forms carrying an IPv4 address are judged by it
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['::10.0.0.1', 'private'],
    ['64:ff9b::192.168.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
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
    '2606:4700::1111',
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
    const problem = await problemOfAsync(() =>
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
        (await problemOfAsync(() => resolveDestination(new URL(url), { allowlist: none, resolver }, 'u')))
          .status,
      ).toBe(400);
    }
    expect(resolver.calls).toBe(0);
  });

  it('https only, unless the address is on the allowlist; never other schemes or credentials', async () => {
    const resolver = resolverOf(['93.184.216.34']);
    const plain = await problemOfAsync(() =>
      resolveDestination(new URL('http://public.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(plain.errors).toEqual({ u: ['Must be an https URL'] });
    const ftp = await problemOfAsync(() =>
      resolveDestination(new URL('ftp://public.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(ftp.errors).toEqual({ u: ['Must be an https URL'] });
    const credentials = await problemOfAsync(() =>
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
    const problem = await problemOfAsync(() =>
      resolveDestination(new URL('https://nowhere.example/'), { allowlist: none, resolver }, 'u'),
    );
    expect(problem.errors).toEqual({ u: ['The host name does not resolve'] });
  });
});
