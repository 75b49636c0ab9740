import { passesLuhn } from './checksums.ts';

// What the service knows of a card number without an issuer database: its brand from the card
// networks' published IIN ranges, its funding for a few well-known test BINs, the BIN and last
// four digits a summary may show (PCI DSS allows them beside the masked number), the CVC length
// of its brand and whether its expiry has passed. docs/card-and-bank-details.md.

/** Basis Theory's brand names (its Node SDK's `CardDetails.brand`). */
export const cardBrands = [
  'visa',
  'mastercard',
  'american-express',
  'discover',
  'diners-club',
  'jcb',
  'unionpay',
  'maestro',
  'elo',
  'mir',
  'hipercard',
] as const;
export type CardBrand = (typeof cardBrands)[number];

export const cardFundings = ['credit', 'debit', 'prepaid'] as const;
export type CardFunding = (typeof cardFundings)[number];

/**
 * A range of leading digits: every number whose first `from.length` digits lie between `from`
 * and `to` (both included, as many digits each).
 */
export interface CardPrefixRange<Value extends string> {
  from: string;
  to: string;
  value: Value;
}

const range = <Value extends string>(value: Value, from: string, to = from): CardPrefixRange<Value> => {
  if (from.length !== to.length || from > to) throw new Error(`bad card prefix range ${from}–${to}`);
  return { from, to, value };
};

/**
 * The brands' IIN ranges as the networks publish them. Where ranges overlap (Elo and Hipercard
 * inside Discover's 65 or Maestro's 63, Mir inside the 22 block), the range with the longer
 * prefix wins: `cardBrandOf` reads them longest first.
 */
export const cardBrandRanges: readonly CardPrefixRange<CardBrand>[] = [
  range('visa', '4'),
  range('mastercard', '51', '55'),
  range('mastercard', '2221', '2720'),
  range('american-express', '34'),
  range('american-express', '37'),
  range('discover', '6011'),
  range('discover', '644', '649'),
  range('discover', '65'),
  range('diners-club', '300', '305'),
  range('diners-club', '36'),
  range('diners-club', '38', '39'),
  range('jcb', '3528', '3589'),
  range('unionpay', '62'),
  range('maestro', '493698'),
  range('maestro', '500000', '504174'),
  range('maestro', '504176', '506698'),
  range('maestro', '506779', '508999'),
  range('maestro', '56', '59'),
  range('maestro', '63'),
  range('maestro', '67'),
  range('elo', '401178', '401179'),
  range('elo', '431274'),
  range('elo', '438935'),
  range('elo', '451416'),
  range('elo', '457393'),
  range('elo', '457631', '457632'),
  range('elo', '504175'),
  range('elo', '506699', '506778'),
  range('elo', '509000', '509999'),
  range('elo', '627780'),
  range('elo', '636297'),
  range('elo', '636368'),
  range('elo', '650031', '650033'),
  range('elo', '650035', '650051'),
  range('elo', '650405', '650439'),
  range('elo', '650485', '650538'),
  range('elo', '650541', '650598'),
  range('elo', '650700', '650718'),
  range('elo', '650720', '650727'),
  range('elo', '650901', '650978'),
  range('elo', '651652', '651679'),
  range('elo', '655000', '655019'),
  range('elo', '655021', '655058'),
  range('mir', '2200', '2204'),
  range('hipercard', '384100'),
  range('hipercard', '384140'),
  range('hipercard', '384160'),
  range('hipercard', '606282'),
  range('hipercard', '637095'),
  range('hipercard', '637568'),
  range('hipercard', '637599'),
  range('hipercard', '637609'),
  range('hipercard', '637612'),
];

/**
 * Funding is the issuer's to say, per BIN; without an issuer database the service knows it only
 * for the networks' and processors' well-known test BINs. Any other card has no `funding`.
 */
export const cardFundingRanges: readonly CardPrefixRange<CardFunding>[] = [
  range('credit', '424242'),
  range('debit', '400005'),
  range('credit', '555555'),
  range('credit', '222300'),
  range('debit', '520082'),
  range('prepaid', '510510'),
  range('credit', '378282'),
  range('credit', '371449'),
  range('credit', '601111'),
  range('credit', '305693'),
  range('credit', '356600'),
  range('credit', '620000'),
];

const longestFirst = <Value extends string>(ranges: readonly CardPrefixRange<Value>[]) =>
  [...ranges].sort((a, b) => b.from.length - a.from.length);

/** The range among these (longest prefix first) that the number falls in, if any. */
function rangeOf<Value extends string>(
  number: string,
  longestPrefixFirst: readonly CardPrefixRange<Value>[],
): CardPrefixRange<Value> | undefined {
  return longestPrefixFirst.find((candidate) => {
    const prefix = number.slice(0, candidate.from.length);
    return prefix.length === candidate.from.length && prefix >= candidate.from && prefix <= candidate.to;
  });
}

const brandsLongestFirst = longestFirst(cardBrandRanges);
const fundingsLongestFirst = longestFirst(cardFundingRanges);

/** The brand range a number falls in: the one with the longest matching prefix. */
export const cardBrandRangeOf = (number: string) => rangeOf(number, brandsLongestFirst);

export const cardBrandOf = (number: string): CardBrand | undefined => cardBrandRangeOf(number)?.value;

export const cardFundingOf = (number: string): CardFunding | undefined =>
  rangeOf(number, fundingsLongestFirst)?.value;

/**
 * The BIN a summary shows: the first 8 digits of a number of 16 digits or more (the 8-digit BINs
 * the card networks moved to, which PCI DSS lets show with the last four), the first 6 otherwise.
 */
export const cardBinOf = (number: string): string => number.slice(0, number.length >= 16 ? 8 : 6);

/** The CVC's length: 4 digits for American Express (its CID), 3 for every other brand. */
export const cvcLengthOf = (brand: CardBrand | undefined): 3 | 4 | undefined =>
  brand === undefined ? undefined : brand === 'american-express' ? 4 : 3;

/** A field-level problem of card data, by its field in `data`. */
export interface CardDataIssue {
  field: 'cvc' | 'expiration_month' | 'expiration_year';
  message: string;
}

/**
 * What the card's shape alone does not tell (the shape is checked beside this, field by field):
 * a CVC of its brand's length, and an expiry not in the past, to the month (a card is valid
 * through the last day of its expiry month). Fields whose shape is wrong are left to that check.
 */
export function cardDataIssues(data: unknown, now: Date): CardDataIssue[] {
  if (typeof data !== 'object' || data === null) return [];
  const card = data as Record<string, unknown>;
  const issues: CardDataIssue[] = [];
  const number = typeof card.number === 'string' && /^\d{13,19}$/.test(card.number) ? card.number : undefined;
  const brand = number && passesLuhn(number) ? cardBrandOf(number) : undefined;
  const cvcLength = cvcLengthOf(brand);
  if (
    typeof card.cvc === 'string' &&
    /^\d{3,4}$/.test(card.cvc) &&
    cvcLength &&
    card.cvc.length !== cvcLength
  ) {
    issues.push({ field: 'cvc', message: `Must be ${cvcLength} digits for a ${brand} card` });
  }
  const month = card.expiration_month;
  const year = card.expiration_year;
  const wellFormed = (value: unknown, min: number, max: number): value is number =>
    typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
  if (wellFormed(month, 1, 12) && wellFormed(year, 2000, 2200)) {
    const currentYear = now.getUTCFullYear();
    const currentMonth = now.getUTCMonth() + 1;
    if (year < currentYear) {
      issues.push({ field: 'expiration_year', message: 'The card has expired: the year is in the past' });
    } else if (year === currentYear && month < currentMonth) {
      issues.push({ field: 'expiration_month', message: 'The card has expired: the month is in the past' });
    }
  }
  return issues;
}
