import { invalidCommand } from '@tokenvault/platform';
import { defaultMasks, type TokenMask, type TokenType } from '@tokenvault/contracts';
import { evaluateMask, MaskFailure } from '@tokenvault/expressions';

// A token's mask: given on create or update, else its type's default. It is checked against the
// data at write time and evaluated on the data when a rule masks a read (docs/token-types.md,
// "Masks"). The masked value is never stored: it comes from the sealed data, so it is sealed and
// shredded with it.

/** Equal JSON values, whatever the order of their keys. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysOfA = Object.keys(a);
  const keysOfB = Object.keys(b);
  return (
    keysOfA.length === keysOfB.length &&
    keysOfA.every(
      (key) => key in b && sameJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  );
}

/** The mask a token answers and masks with: its own, else its type's default, else none. */
export const maskOf = (type: TokenType, given: TokenMask | undefined | null): TokenMask | undefined =>
  given ?? defaultMasks[type];

/**
 * Of a text, what a mask may show: its last four characters, or half of a shorter one (rounded
 * down), the others replaced by `X` (as `reveal_last` does).
 */
function lastCharactersOnly(text: string): string {
  const characters = [...text];
  const shown = Math.min(4, Math.floor(characters.length / 2));
  return 'X'.repeat(characters.length - shown) + characters.slice(characters.length - shown).join('');
}

/**
 * Every text and number of a value reduced to lastCharactersOnly (numbers become texts); a
 * boolean or null, which is all value and no characters to keep, becomes `X` as a one-character
 * text does (a flag such as `hiv_positive` is data, and "last four" of it would be all of it).
 */
function reducedLeaves(value: unknown): unknown {
  if (typeof value === 'string') return lastCharactersOnly(value);
  if (typeof value === 'number') return lastCharactersOnly(String(value));
  if (typeof value === 'boolean' || value === null) return 'X';
  if (Array.isArray(value)) return value.map(reducedLeaves);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, reducedLeaves(item)]));
  }
  return value;
}

/**
 * What a mask is evaluated on: the data with every text and number reduced to its last four
 * characters (half of a shorter one), but for what every answer's summary shows anyway (a card's
 * expiry, a bank's routing number), and without a card's CVC. A mask can only rearrange what this
 * holds, whatever its filters do (slices, replacements, concatenations): it cannot copy more of
 * the data than the fixed shape "last four" allows, whoever set it (docs/token-types.md, Masks).
 */
export function maskableData(type: TokenType, data: unknown): unknown {
  if (type === 'card' && typeof data === 'object' && data !== null && !Array.isArray(data)) {
    const { cvc: _cvc, expiration_month, expiration_year, ...rest } = data as Record<string, unknown>;
    return {
      ...(reducedLeaves(rest) as object),
      ...(expiration_month === undefined ? {} : { expiration_month }),
      ...(expiration_year === undefined ? {} : { expiration_year }),
    };
  }
  if (type === 'bank' && typeof data === 'object' && data !== null && !Array.isArray(data)) {
    const { routing_number, ...rest } = data as Record<string, unknown>;
    return {
      ...(reducedLeaves(rest) as object),
      ...(routing_number === undefined ? {} : { routing_number }),
    };
  }
  return reducedLeaves(data);
}

/** Every text of a mask, its fields' names and its expressions: the names it spells. */
function textsOf(mask: TokenMask): string[] {
  if (typeof mask === 'string') return [mask];
  if (Array.isArray(mask)) return mask.flatMap(textsOf);
  return Object.entries(mask).flatMap(([field, inner]) => [field, ...textsOf(inner)]);
}

/**
 * The value with every property name that the mask does not spell replaced by a placeholder
 * (`\u0000` and a number: no name a mask can spell). A mask finds fields by the names it spells;
 * the other names reach its result only as names (`json: '$.diagnoses.*~'`, an object copied or
 * stringified), and in free-form data a name can be the data (`{"F20.9 schizophrenia": …}`).
 */
function withUnspelledNamesReplaced(value: unknown, spelled: string): unknown {
  if (Array.isArray(value)) return value.map((item) => withUnspelledNamesReplaced(item, spelled));
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const names = new Set(entries.map(([name]) => name));
  let next = 0;
  const placeholder = () => {
    let name = `\u0000${next++}`;
    while (names.has(name)) name = `\u0000${next++}`;
    names.add(name);
    return name;
  };
  return Object.fromEntries(
    entries.map(([name, item]) => [
      spelled.includes(name) ? name : placeholder(),
      withUnspelledNamesReplaced(item, spelled),
    ]),
  );
}

/**
 * The mask evaluated on the data's maskable form, or undefined when it does not fit it, or when
 * its result shows a property name it does not spell (it differs once those names are replaced):
 * a mask shows values reduced to their last four, never the data's structure as data.
 */
function maskedAsShown(mask: TokenMask, type: TokenType, data: unknown): unknown {
  const maskable = maskableData(type, data);
  try {
    const masked = evaluateMask(mask, maskable);
    const spelled = textsOf(mask).join('\n');
    const withoutNames = evaluateMask(mask, withUnspelledNamesReplaced(maskable, spelled));
    return sameJson(masked, withoutNames) ? masked : undefined;
  } catch (error) {
    if (error instanceof MaskFailure) return undefined;
    throw error;
  }
}

/**
 * A given mask checked against the data it masks: every field it names exists and every filter
 * applies (else a 400 naming where in `body.mask`); it shows no more than its maskable data holds
 * (maskableData: evaluated on the data itself, it must give what it gives on that, else a 400
 * naming `body.mask`: it would copy more of a field than a mask may, or the CVC); and its result
 * does not reveal the whole data (a 400 naming `body.mask`).
 */
export function assertMaskFits(mask: TokenMask, data: unknown, type: TokenType): void {
  let masked: unknown;
  try {
    masked = evaluateMask(mask, data);
  } catch (error) {
    if (!(error instanceof MaskFailure)) throw error;
    throw invalidCommand('The mask cannot be evaluated on this data; see errors.', {
      [`body.${error.location}`]: [error.message],
    });
  }
  const shown = maskedAsShown(mask, type, data);
  if (shown === undefined || !sameJson(masked, shown)) {
    throw invalidCommand('The mask shows more of the data than a mask may.', {
      'body.mask': [
        'Must show at most the last four characters of each text or number (half of a shorter one), no boolean or null, no property name of the data that the mask does not spell itself, a card’s expiry and a bank’s routing number, and never a CVC: use reveal_last on the fields it names (docs/token-types.md, Masks)',
      ],
    });
  }
  if (sameJson(masked, data)) {
    throw invalidCommand('The mask reveals the whole data.', {
      'body.mask': ['Must hide part of the data: this mask’s result equals the data'],
    });
  }
}

/**
 * What a masked read shows in place of the data: the mask evaluated on its maskable data
 * (maskableData: never more of it than the last four characters of a field, whatever the mask);
 * undefined (no data) when the token has no mask, or when its mask does not fit that (a default
 * mask on data too short to hide anything, a mask naming the CVC), shows a property name it does
 * not spell (a mask stored before that rule), or would reveal the data whole.
 */
export function maskedData(mask: TokenMask | undefined, data: unknown, type: TokenType): unknown {
  if (mask === undefined) return undefined;
  const masked = maskedAsShown(mask, type, data);
  return masked === undefined || sameJson(masked, data) ? undefined : masked;
}
