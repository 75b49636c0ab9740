import vm from 'node:vm';

/**
 * Whether formula code compiles, WITHOUT running it: `new vm.Script` parses and compiles only.
 * The code is wrapped as the sandbox wraps it (a CommonJS module body), so `module.exports = …`
 * and a top-level `return` are valid. Returns the syntax error's message (with its line), or
 * undefined when the code compiles.
 */
export function checkFormulaSyntax(code: string): string | undefined {
  try {
    new vm.Script(`(function(module, exports, require){${code}\n})`, { filename: 'formula.js' });
    return undefined;
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    // The wrapper adds no line before the code, so V8's line is the code's line (an error at the
    // end of input is on the wrapper's closing line: reported as the code's last one).
    const line = Number(/formula\.js:(\d+)/.exec(error.stack ?? '')?.[1]);
    if (!line) return error.message;
    return `${error.message} (line ${Math.min(line, code.split('\n').length)})`;
  }
}
