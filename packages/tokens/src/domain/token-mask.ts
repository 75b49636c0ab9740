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
 * A given mask checked against the data it masks: every field it names exists and every filter
 * applies (else a 400 naming where in `body.mask`), and its result does not reveal the whole data
 * (a 400 naming `body.mask`).
 */
export function assertMaskFits(mask: TokenMask, data: unknown): void {
  let masked: unknown;
  try {
    masked = evaluateMask(mask, data);
  } catch (error) {
    if (!(error instanceof MaskFailure)) throw error;
    throw invalidCommand('The mask cannot be evaluated on this data; see errors.', {
      [`body.${error.location}`]: [error.message],
    });
  }
  if (sameJson(masked, data)) {
    throw invalidCommand('The mask reveals the whole data.', {
      'body.mask': ['Must hide part of the data: this mask’s result equals the data'],
    });
  }
}

/**
 * What a masked read shows in place of the data: the mask evaluated on it; undefined (no data)
 * when the token has no mask, or when its mask no longer fits the data (a default mask on data too
 * short to hide anything, a mask naming the CVC after its removal) or would reveal it whole.
 */
export function maskedData(mask: TokenMask | undefined, data: unknown): unknown {
  if (mask === undefined) return undefined;
  try {
    const masked = evaluateMask(mask, data);
    return sameJson(masked, data) ? undefined : masked;
  } catch (error) {
    if (error instanceof MaskFailure) return undefined;
    throw error;
  }
}
