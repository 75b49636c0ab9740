import type { ConfigurationDeclaration } from '@tokenvault/contracts';
import { invalidCommand, type FieldErrors } from '@tokenvault/platform';
import type { ReactorConfiguration } from './reactors.events.ts';
import { hasType, typeMessage } from './values.ts';

/**
 * A reactor's configuration against its formula's declarations: every declared name present with
 * a value of its type (no casts: configuration is written by an administrator, not a caller), and
 * no undeclared name. Errors are named `body.configuration.<name>`.
 */
export function configurationErrors(
  declarations: readonly ConfigurationDeclaration[],
  configuration: ReactorConfiguration,
): FieldErrors {
  const errors: FieldErrors = {};
  const field = (name: string) => `body.configuration.${name}`;
  const declared = new Set(declarations.map((declaration) => declaration.name));
  for (const { name, type } of declarations) {
    const value = Object.hasOwn(configuration, name) ? configuration[name] : undefined;
    if (value === undefined || value === null) errors[field(name)] = ['Required'];
    else if (!hasType(value, type)) errors[field(name)] = [typeMessage(type)];
  }
  for (const name of Object.keys(configuration)) {
    if (!declared.has(name)) errors[field(name)] = ['Not declared in the formula’s configuration'];
  }
  return errors;
}

/** Refuses (invalid) naming each wrong field, unless the configuration satisfies the declarations. */
export function assertConfiguration(
  declarations: readonly ConfigurationDeclaration[],
  configuration: ReactorConfiguration,
): void {
  const errors = configurationErrors(declarations, configuration);
  if (Object.keys(errors).length > 0) {
    throw invalidCommand(
      'The configuration does not satisfy the formula; see errors for each field.',
      errors,
    );
  }
}
