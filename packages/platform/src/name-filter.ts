/**
 * A list's `name` filter as an ILIKE pattern (with `ESCAPE '\'`): case-insensitive; `*` matches
 * any run of characters (none included) and anchors the pattern at both ends; a pattern without
 * `*` matches names that contain it. `%`, `_` and `\` match themselves.
 */
export function namePattern(filter: string): string {
  const escaped = filter.replace(/[\\%_]/g, (character) => `\\${character}`).replace(/\*/g, '%');
  return filter.includes('*') ? escaped : `%${escaped}%`;
}
