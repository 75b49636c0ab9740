import type { DomainEvent } from '@tokenvault/cqrs';
import type {
  ConfigurationDeclaration,
  FormulaType,
  RequestParameterDeclaration,
} from '@tokenvault/contracts';

/** What a formula declares, as decided (the same in its create and update events). */
export interface FormulaDefinition {
  name: string;
  description?: string;
  type: FormulaType;
  code: string;
  configuration: ConfigurationDeclaration[];
  request_parameters: RequestParameterDeclaration[];
}

export type ReactorConfiguration = Record<string, unknown>;

/**
 * The sealing subject of a reactor's configuration (associated data with the tenant id): a
 * configuration sealed for one reactor opens for that reactor only. The `/` keeps it apart from
 * every token id (token ids, the subjects of token data, never hold one).
 */
export const configurationSubject = (reactorId: string) => `reactor/${reactorId}/configuration`;

export type ReactorsEvent =
  | DomainEvent<
      'ReactorFormulaCreated',
      FormulaDefinition & { formula_id: string; tenant_id: string; created_by: string; created_at: string }
    >
  | DomainEvent<
      'ReactorFormulaUpdated',
      FormulaDefinition & { formula_id: string; tenant_id: string; modified_by: string; modified_at: string }
    >
  | DomainEvent<
      'ReactorFormulaDeleted',
      { formula_id: string; tenant_id: string; deleted_by: string; deleted_at: string }
    >
  | DomainEvent<
      'ReactorCreated',
      {
        reactor_id: string;
        tenant_id: string;
        name: string;
        formula_id: string;
        /** The configuration, sealed under the tenant's data key (`configurationSubject`). */
        configuration_ciphertext: string;
        application_id?: string;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'ReactorUpdated',
      {
        reactor_id: string;
        tenant_id: string;
        name: string;
        /** The configuration, sealed under the tenant's data key (`configurationSubject`). */
        configuration_ciphertext: string;
        application_id?: string;
        modified_by: string;
        modified_at: string;
      }
    >
  | DomainEvent<
      'ReactorDeleted',
      { reactor_id: string; tenant_id: string; formula_id: string; deleted_by: string; deleted_at: string }
    >;

export const streams = {
  formula: (tenantId: string, formulaId: string) => `reactors.formula-${tenantId}-${formulaId}`,
  reactor: (tenantId: string, reactorId: string) => `reactors.reactor-${tenantId}-${reactorId}`,
};

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const reactorsEventTypes = Object.keys({
  ReactorFormulaCreated: true,
  ReactorFormulaUpdated: true,
  ReactorFormulaDeleted: true,
  ReactorCreated: true,
  ReactorUpdated: true,
  ReactorDeleted: true,
} satisfies Record<ReactorsEvent['type'], true>) as ReactorsEvent['type'][];
