import { expect } from 'vitest';
import type { TestTenant } from './stack.ts';

export interface ParameterDeclaration {
  name: string;
  type: string;
  optional?: boolean;
}

export interface FormulaInput {
  code: string;
  request_parameters?: ParameterDeclaration[];
  configuration?: { name: string; type: string }[];
}

export interface ReactorResponse {
  tokens?: Record<string, unknown>;
  raw?: unknown;
}

/** A formula and a reactor of it, in one call: the reactor's id. */
export async function createReactor(
  tenant: TestTenant,
  formula: FormulaInput,
  reactor: { configuration?: Record<string, unknown>; applicationId?: string } = {},
): Promise<string> {
  const created = await tenant.client.request<{ id: string }>('POST', '/reactor-formulas', {
    body: {
      name: 'formula',
      type: 'private',
      code: formula.code,
      configuration: formula.configuration ?? [],
      request_parameters: formula.request_parameters ?? [],
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const made = await tenant.client.request<{ id: string }>('POST', '/reactors', {
    body: {
      name: 'reactor',
      configuration: reactor.configuration ?? {},
      formula: { id: created.body.id },
      ...(reactor.applicationId ? { application: { id: reactor.applicationId } } : {}),
    },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  return made.body.id;
}

export const react = (tenant: TestTenant, reactorId: string, args?: unknown, apiKey?: string) =>
  tenant.client.request<ReactorResponse & { errors?: Record<string, string[]>; detail?: string }>(
    'POST',
    `/reactors/${reactorId}/react`,
    { body: args === undefined ? {} : { args }, ...(apiKey ? { apiKey } : {}) },
  );

/** Code that answers its detokenized, validated args as raw. */
export const echoArgs = 'module.exports = async function (req) { return { raw: req.args }; };';
