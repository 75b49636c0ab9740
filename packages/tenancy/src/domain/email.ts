import emailAddresses from 'email-addresses';

/**
 * A bare RFC 5322 addr-spec (`local@domain`), checked by the `email-addresses` parser (a
 * grammar-derived RFC 5322 parser) in strict mode (no obsolete syntax): no display name, no
 * group, no comments, no surrounding spaces; at most 64 characters before the @ and 254 in all
 * (RFC 5321's limits, so the address can be delivered). Returns the address with its domain
 * lower-cased (the local part is case-sensitive, so it is kept), or undefined when not valid.
 * ASCII only, as RFC 5322 (RFC 6532 internationalised addresses are not accepted).
 */
export function parseEmailAddress(input: string): string | undefined {
  if (input.length === 0 || input.length > 254 || input !== input.trim()) return undefined;
  const parsed = emailAddresses.parseOneAddress({ input, strict: true, rfc6532: false });
  if (!parsed || parsed.type !== 'mailbox') return undefined;
  if (parsed.name !== null || parsed.parts.comments.length > 0) return undefined;
  const local = parsed.parts.local.tokens;
  const domain = parsed.parts.domain.tokens;
  // Anything around the addr-spec (folding white space, angle brackets) makes it not bare.
  if (`${local}@${domain}` !== input || local.length > 64) return undefined;
  return `${local}@${domain.toLowerCase()}`;
}
