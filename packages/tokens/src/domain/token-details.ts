import {
  cardBinOf,
  cardBrandOf,
  cardFundingOf,
  type AccessTransform,
  type TokenType,
} from '@tokenvault/contracts';
import type { BankSummary, CardSummary } from './tokens.events.ts';

// What the command side derives from a token's plaintext before sealing it: the summaries a read
// shows without the data, the part of the data its fingerprint is of, and the CVC a card holds.
// The projection never sees plaintext: these reach it as the events' fields.

/** Data already checked for its type (tokenDataIssues), as the command side has it. */
type CheckedData = unknown;

const field = (data: CheckedData, name: string): unknown =>
  typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[name] : undefined;

/** A card's summary from its number (and, for a `card`, its expiry). */
export function cardSummaryOf(number: string, expiry?: { month: number; year: number }): CardSummary {
  const brand = cardBrandOf(number);
  const funding = cardFundingOf(number);
  return {
    bin: cardBinOf(number),
    last4: number.slice(-4),
    ...(brand ? { brand } : {}),
    ...(funding ? { funding } : {}),
    ...(expiry ? { expiration_month: expiry.month, expiration_year: expiry.year } : {}),
  };
}

/** Digits of the BIN a masked card shows: PCI DSS's display maximum beside a masked number is the first six. */
export const maskedBinLength = 6;

/**
 * A token's answer with its summaries as the caller's token:read decision shows them
 * (docs/security.md, "Card summaries"): `reveal` all of them, the BIN of 8 digits for a number of
 * 16 or more (the caller may see the number); `mask` the card's first six and last four (8 + 4
 * leaves a 16-digit number 1,000 candidates under the Luhn check, 6 + 4 leaves 100,000) and the
 * bank's routing number and last four; `redact`, or no read at all (a key that may only search or
 * update), none. Only `reveal` shows the fingerprint. A create's answer is of data the caller
 * gave and is not passed through this.
 */
export function summariesShown<
  Fields extends { card?: { bin: string }; bank?: unknown; fingerprint?: string },
>(fields: Fields, transform: AccessTransform | undefined): Fields {
  if (transform === 'reveal') return fields;
  // The fingerprint goes too: any key that may create a token (a public key) gets the
  // fingerprint of a guess in its create's answer, and equal fingerprints confirm the guess.
  const { card, bank, fingerprint: _equalityTest, ...rest } = fields;
  if (transform !== 'mask') return rest as Fields;
  return {
    ...rest,
    ...(card ? { card: { ...card, bin: card.bin.slice(0, maskedBinLength) } } : {}),
    ...(bank === undefined ? {} : { bank }),
  } as Fields;
}

/** `card` for card and card_number tokens, `bank` for bank tokens; nothing for the other types. */
export function tokenSummariesOf(
  type: TokenType,
  data: CheckedData,
): { card?: CardSummary; bank?: BankSummary } {
  switch (type) {
    case 'card':
      return {
        card: cardSummaryOf(String(field(data, 'number')), {
          month: Number(field(data, 'expiration_month')),
          year: Number(field(data, 'expiration_year')),
        }),
      };
    case 'card_number':
      return { card: cardSummaryOf(String(data)) };
    case 'bank':
      return {
        bank: {
          routing_number: String(field(data, 'routing_number')),
          account_number_last4: String(field(data, 'account_number')).slice(-4),
        },
      };
    case 'token':
    case 'us_bank_account_number':
    case 'us_bank_routing_number':
    case 'social_security_number':
    case 'employer_id_number':
      return {};
  }
}

/**
 * What a token's fingerprint is an HMAC of (docs/token-types.md, Fingerprints): a card's number
 * alone (the same card with another expiry or CVC is the same card), a bank account's routing and
 * account numbers (its whole data), the digits of a social security or employer id number (with
 * or without dashes, one number), and the whole data of every other type.
 */
export function fingerprintSubjectOf(type: TokenType, data: CheckedData): unknown {
  switch (type) {
    case 'card':
      return field(data, 'number');
    case 'bank':
      return { routing_number: field(data, 'routing_number'), account_number: field(data, 'account_number') };
    case 'social_security_number':
    case 'employer_id_number':
      return String(data).replaceAll('-', '');
    case 'token':
    case 'card_number':
    case 'us_bank_account_number':
    case 'us_bank_routing_number':
      return data;
  }
}

/** Whether this data holds a card's CVC (the one field removed after CARD_CVC_TTL_SECONDS). */
export const holdsCvc = (type: TokenType, data: CheckedData): boolean =>
  type === 'card' && field(data, 'cvc') !== undefined;

/** The card's data without its CVC; everything else as it was. */
export function withoutCvc(data: CheckedData): CheckedData {
  if (typeof data !== 'object' || data === null) return data;
  const { cvc: _removed, ...rest } = data as Record<string, unknown>;
  return rest;
}
