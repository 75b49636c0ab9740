import { describe, expect, it } from 'vitest';
import { checkFormulaSyntax } from './formula-syntax.ts';

describe('checkFormulaSyntax', () => {
  it('accepts a module body and async functions', () => {
    expect(
      checkFormulaSyntax('module.exports = async function (req) {\n  return { raw: req.args };\n};'),
    ).toBeUndefined();
    // The sandbox binds module and exports itself: code may declare names of its own.
    expect(
      checkFormulaSyntax('const require = 1;\nmodule.exports = async () => ({ raw: require });'),
    ).toBeUndefined();
  });

  it('refuses what the sandbox cannot compile: a top-level return, or code closing a wrapper', () => {
    expect(checkFormulaSyntax('return 1;')).toMatch(/Illegal return/);
    expect(checkFormulaSyntax('})(); module.exports = async () => ({ raw: 1 }); (function(){')).toEqual(
      expect.any(String),
    );
  });

  it('names the error and its line', () => {
    expect(checkFormulaSyntax('const a = 1;\nconst = 2;\nmodule.exports = a;')).toMatch(/line 2\)$/);
    expect(checkFormulaSyntax('const a = 1;\nmodule.exports = function ( {')).toMatch(
      /^Unexpected end of input \(line 2\)$/,
    );
    expect(checkFormulaSyntax('let = ;')).toEqual(expect.any(String));
  });

  it('never runs the code', () => {
    const marker = `ran_${Date.now()}`;
    expect(checkFormulaSyntax(`globalThis.${marker} = true; throw new Error('ran');`)).toBeUndefined();
    expect((globalThis as Record<string, unknown>)[marker]).toBeUndefined();
  });
});
