// Which addresses an outbound request (a proxied request, a webhook delivery) may connect to.
// Refused unless the operator allow-lists them (PROXY_ALLOWED_PRIVATE_ADDRESSES,
// WEBHOOK_ALLOWED_PRIVATE_ADDRESSES): every range of the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (loopback, private, link-local (cloud metadata), CGNAT, unique-local, documentation,
// benchmarking, reserved, and the anycast services and identifiers they list as globally
// reachable: the nearest instance of an anycast service is often the network's own), multicast,
// and any IPv6 address outside the global unicast space (2000::/3). IPv6 forms that carry an IPv4
// address (mapped, translated, compatible, NAT64 64:ff9b::/96, 6to4) are judged by that IPv4
// address. The local-use NAT64 prefix 64:ff9b:1::/48 is refused whatever it carries: where its
// translator sends an address is the local network's own choice (RFC 8215), internal networks
// included. The table of every range with its verdict is addresses.unit.spec.ts.
import { BlockList, isIP } from 'node:net';

const refusedIpv4: readonly [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'CGNAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.31.196.0', 24, 'AS112'],
  ['192.52.193.0', 24, 'AMT'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['192.175.48.0', 24, 'AS112'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
];

const refusedIpv6: readonly [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'NAT64 local-use'],
  ['100::', 64, 'reserved'],
  ['100:0:0:1::', 64, 'dummy IPv6 prefix'],
  ['2001::', 23, 'reserved'],
  ['2001:db8::', 32, 'documentation'],
  ['2620:4f:8000::', 48, 'AS112'],
  ['3fff::', 20, 'documentation'],
  ['5f00::', 16, 'SRv6 SID'],
  ['fc00::', 7, 'unique-local'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['ff00::', 8, 'multicast'],
];

function rangeList(ranges: readonly [string, number, string][], family: 'ipv4' | 'ipv6') {
  return ranges.map(([network, prefix, kind]) => {
    const list = new BlockList();
    list.addSubnet(network, prefix, family);
    return { list, kind };
  });
}

const ipv4Ranges = rangeList(refusedIpv4, 'ipv4');
const ipv6Ranges = rangeList(refusedIpv6, 'ipv6');
const globalUnicast = rangeList([['2000::', 3, 'global unicast']], 'ipv6')[0]!.list;

/** The 16 bytes of an IPv6 address (with or without an IPv4 tail); undefined when not one. */
export function ipv6Bytes(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.split('%')[0]!;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const octets = tail[1]!.split('.').map(Number);
    text = `${text.slice(0, -tail[1]!.length)}${((octets[0]! << 8) | octets[1]!).toString(16)}:${((octets[2]! << 8) | octets[3]!).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const missing = 8 - headGroups.length - restGroups.length;
  const groups = [
    ...headGroups,
    ...(rest === undefined ? [] : Array<string>(missing).fill('0')),
    ...restGroups,
  ];
  return groups.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

/** The IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64 64:ff9b::/96, 6to4), if any. */
export function embeddedIpv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  if (!bytes) return undefined;
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  const v4 = (from: number) => bytes.slice(from, from + 4).join('.');
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated)
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return v4(12);
  if (zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12)) return v4(12);
  // ::a.b.c.d (compatible, deprecated); :: and ::1 are judged as IPv6
  if (zeros(0, 12) && !zeros(12, 15)) return v4(12);
  // 64:ff9b::/96 (NAT64)
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12))
    return v4(12);
  // 2002::/16 (6to4)
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return v4(2);
  return undefined;
}

/**
 * Why an address may not be connected to ('loopback', 'private', …), or undefined when it is a
 * public address. Not an IP address at all: 'not an IP address'.
 */
export function nonPublicKind(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return ipv4Ranges.find(({ list }) => list.check(address, 'ipv4'))?.kind;
  if (family === 6) {
    const carried = embeddedIpv4(address);
    if (carried !== undefined) return nonPublicKind(carried);
    const bare = address.split('%')[0]!;
    const kind = ipv6Ranges.find(({ list }) => list.check(bare, 'ipv6'))?.kind;
    return kind ?? (globalUnicast.check(bare, 'ipv6') ? undefined : 'reserved');
  }
  return 'not an IP address';
}

/** The operator's allowlist: addresses and CIDRs, IPv4 and IPv6 (IPv4 also as carried by IPv6). */
export class AddressAllowlist {
  private readonly list = new BlockList();
  readonly empty: boolean;
  /** The setting the entries come from, named in refusals so that an operator knows what to change. */
  readonly variable: string | undefined;

  constructor(entries: string, variable?: string) {
    this.variable = variable;
    const parts = entries
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    this.empty = parts.length === 0;
    for (const entry of parts) {
      const [address = '', prefix] = entry.split('/');
      const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(prefix), family);
    }
  }

  has(address: string): boolean {
    if (this.empty) return false;
    const family = isIP(address);
    if (family === 4) return this.list.check(address, 'ipv4');
    if (family !== 6) return false;
    const bare = address.split('%')[0]!;
    if (this.list.check(bare, 'ipv6')) return true;
    const carried = embeddedIpv4(bare);
    return carried !== undefined && this.list.check(carried, 'ipv4');
  }
}
