import { describe, expect, it } from 'vitest';
import { contextEventTypes, contexts } from './contexts.ts';
import { allMigrations } from './runtime.ts';

// What the runtime's loops over the manifests rely on.
describe('the contexts list', () => {
  it('names each context once', () => {
    const names = contexts.map((context) => context.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it("keeps each context's migrations under its name (or one it had when they were applied), every id once", () => {
    for (const context of contexts) {
      const names = [context.name, ...(context.formerNames ?? [])];
      for (const migration of context.migrations) expect(names).toContain(migration.id.split('/')[0]);
    }
    const ids = allMigrations.map((migration) => migration.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives each event type to one context', () => {
    expect(new Set(contextEventTypes).size).toBe(contextEventTypes.length);
  });

  it('names each read model once, in one projection mode list', () => {
    const names = contexts.flatMap((context) =>
      [...context.projections.consistent, ...context.projections.trailing].map(
        (projection) => projection.name,
      ),
    );
    expect(new Set(names).size).toBe(names.length);
  });
});
