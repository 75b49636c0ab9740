import { checkSyntax } from '@tokenvault/code-runs';

/**
 * Whether formula code compiles, WITHOUT running it. It asks the sandbox's own checker, which
 * compiles the code exactly as a run does (a plain script, not wrapped in a function), so a
 * formula that is saved never fails to compile at its first invocation. Returns the syntax
 * error's message (with its line), or undefined when the code compiles.
 */
export function checkFormulaSyntax(code: string): string | undefined {
  const checked = checkSyntax(code);
  if (checked.ok) return undefined;
  return checked.line === undefined ? checked.message : `${checked.message} (line ${checked.line})`;
}
