import { Script } from 'node:vm';

export type SyntaxCheck = { ok: true } | { ok: false; message: string; line?: number };

const FILENAME = 'reactor.js';

/**
 * Compiles reactor code without running it (V8's parser, in this process: compiling runs no
 * code), so a formula that does not compile can be refused when it is saved.
 */
export function checkSyntax(code: string): SyntaxCheck {
  try {
    new Script(code, { filename: FILENAME });
    return { ok: true };
  } catch (error) {
    if (!(error instanceof SyntaxError)) return { ok: false, message: 'Reactor code could not be compiled' };
    const line = /^reactor\.js:(\d+)/.exec(error.stack ?? '')?.[1];
    return line === undefined
      ? { ok: false, message: error.message }
      : { ok: false, message: error.message, line: Number(line) };
  }
}
