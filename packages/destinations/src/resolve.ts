import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { badRequest } from '@tokenvault/platform';
import { nonPublicKind, type AddressAllowlist } from './addresses.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Every address a host name has (one question: the answer used is the answer checked). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));

/** Where an outbound request goes: the URL as given, and the one address it will connect to. */
export interface Destination {
  url: URL;
  address: string;
  family: 4 | 6;
}

export interface DestinationPolicy {
  allowlist: AddressAllowlist;
  resolver: Resolver;
}

/**
 * The destination of `url`, checked before anything is sent: https (http only to allow-listed
 * addresses), and every address the name resolves to public or allow-listed. The name is
 * resolved once here and the request connects to the address returned, so a second answer (DNS
 * rebinding) never matters. A refusal is a 400 naming `field`.
 */
export async function resolveDestination(
  url: URL,
  policy: DestinationPolicy,
  field: string,
): Promise<Destination> {
  const refuse = (message: string) => badRequest('The destination is not allowed.', { [field]: [message] });
  // The fix is the operator's: a private destination is reached only once its setting lists it.
  const { variable } = policy.allowlist;
  const allowedBy = variable ? ` unless the operator lists it in ${variable}` : '';
  const httpsOnly = variable
    ? `Must be an https URL (plain http only to addresses listed in ${variable})`
    : 'Must be an https URL';
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('Must be an https URL');
  if (url.username || url.password) throw refuse('Must not carry credentials');
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: ResolvedAddress[];
  if (isIP(hostname)) {
    addresses = [{ address: hostname, family: isIP(hostname) === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await policy.resolver(hostname);
    } catch {
      throw refuse('The host name does not resolve');
    }
    if (addresses.length === 0) throw refuse('The host name does not resolve');
  }
  for (const { address } of addresses) {
    if (policy.allowlist.has(address)) continue;
    const kind = nonPublicKind(address);
    if (kind) throw refuse(`Resolves to a ${kind} address, which is not allowed${allowedBy}`);
    if (url.protocol === 'http:') throw refuse(httpsOnly);
  }
  return { url, ...addresses[0]! };
}
