import { invalidCommand } from '@tokenvault/platform';
import type { ReactorResponse } from '@tokenvault/contracts';
import type { CodeRunRequest } from '@tokenvault/code-runs';
import { configurationErrors } from './configuration.ts';

/** The owner of a reactor's runs in the run queue: its async results are read back under it. */
export const reactorRunOwner = (reactorId: string) => `reactors/${reactorId}`;

/**
 * What a run of this reactor takes from it (its code, its configuration, its application, its
 * answer: `{ raw, tokenize }`); invalid (`invalid-reactor-configuration`) when its configuration
 * no longer satisfies its formula (the formula changed since).
 */
export function reactorRunBase(
  reactor: ReactorResponse,
): Pick<CodeRunRequest, 'code' | 'configuration' | 'application_id' | 'answers'> {
  const misconfigured = configurationErrors(reactor.formula.configuration, reactor.configuration);
  if (Object.keys(misconfigured).length > 0) {
    throw invalidCommand(
      'The reactor’s configuration no longer satisfies its formula; update the reactor.',
      misconfigured,
      'invalid-reactor-configuration',
    );
  }
  return {
    code: reactor.formula.code,
    configuration: reactor.configuration,
    application_id: reactor.application?.id ?? null,
    answers: 'raw-and-tokens',
  };
}
