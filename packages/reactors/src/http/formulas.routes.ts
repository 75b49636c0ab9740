import { z } from 'zod';
import { defineRoute, notFound, pageQuery, paginated, type RouteDefinition } from '@tokenvault/platform';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import {
  idParams,
  nameFilter,
  paginatedSchema,
  reactorFormulaBody,
  reactorFormulaSchema,
} from '@tokenvault/contracts';
import type { FormulaCommands } from '../commands/formulas.commands.ts';
import type { FormulaQueries } from '../queries/formulas.queries.ts';

/** What the formula routes use, built by the reactors manifest's `routes(deps)` (context.ts). */
export interface FormulaRouteDeps {
  commands: Pick<FormulaCommands, 'create' | 'update' | 'delete'>;
  queries: Pick<FormulaQueries, 'list' | 'get'>;
  consistency: Pick<ReadModelConsistency, 'afterWrite'>;
}

const missing = () => notFound('No reactor formula with this id.');

/** Formulas are guarded by the reactor:* permissions (the spec names no formula permissions). */
export function formulaRoutes({ commands, queries, consistency }: FormulaRouteDeps): RouteDefinition[] {
  const tag = 'Reactor formulas';
  return [
    defineRoute({
      method: 'post',
      path: '/reactor-formulas',
      operationId: 'createReactorFormula',
      summary: 'Create a reactor formula (code that does not compile: 422 naming body.code)',
      tag,
      permission: 'reactor:create',
      returnsSensitive: [],
      body: reactorFormulaBody,
      responses: { 201: { description: 'Created', schema: reactorFormulaSchema } },
      async handle({ principal, body, requestId }) {
        const created = await commands.create(principal, body, requestId);
        return {
          status: 201,
          headers: await consistency.afterWrite(created.position),
          body: created.formula,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/reactor-formulas',
      operationId: 'listReactorFormulas',
      summary: 'List reactor formulas (name: case-insensitive; * matches any run of characters)',
      tag,
      permission: 'reactor:read',
      returnsSensitive: [],
      query: z.strictObject({ name: nameFilter, ...pageQuery(100) }),
      responses: {
        200: { description: 'A page of reactor formulas', schema: paginatedSchema(reactorFormulaSchema) },
      },
      async handle({ principal, query }) {
        const { items, total } = await queries.list(
          principal.tenantId,
          { name: query.name },
          query.page,
          query.size,
        );
        return { status: 200, body: paginated(items, query.page, query.size, total) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/reactor-formulas/:id',
      operationId: 'getReactorFormula',
      summary: 'Get a reactor formula',
      tag,
      permission: 'reactor:read',
      returnsSensitive: [],
      params: idParams,
      responses: { 200: { description: 'The reactor formula', schema: reactorFormulaSchema } },
      async handle({ principal, params }) {
        const formula = await queries.get(principal.tenantId, params.id);
        if (!formula) throw missing();
        return { status: 200, body: formula };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/reactor-formulas/:id',
      operationId: 'updateReactorFormula',
      summary: 'Replace a reactor formula (code that does not compile: 422 naming body.code)',
      tag,
      permission: 'reactor:update',
      returnsSensitive: [],
      params: idParams,
      body: reactorFormulaBody,
      responses: { 200: { description: 'The updated reactor formula', schema: reactorFormulaSchema } },
      async handle({ principal, params, body, requestId }) {
        const updated = await commands.update(principal, params.id, body, requestId);
        return {
          status: 200,
          headers: await consistency.afterWrite(updated.position),
          body: updated.formula,
        };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/reactor-formulas/:id',
      operationId: 'deleteReactorFormula',
      summary: 'Delete a reactor formula (409 while reactors use it)',
      tag,
      permission: 'reactor:delete',
      returnsSensitive: [],
      params: idParams,
      responses: { 204: { description: 'Deleted' } },
      async handle({ principal, params, requestId }) {
        const deleted = await commands.delete(principal, params.id, requestId);
        return { status: 204, headers: await consistency.afterWrite(deleted.position) };
      },
    }),
  ];
}
