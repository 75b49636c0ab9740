import type pg from 'pg';

const independentRows = Symbol('independent rows');

type IndependentRowsStatement = pg.QueryConfig & { [independentRows]: readonly unknown[] };

/**
 * An inline projection's statement that may be merged with the same statement of the other appends
 * of a group-commit batch (group-commit.ts): `text` takes its rows as one jsonb array, `$1`, its
 * only value. By using it the projection declares two things of the statement:
 * - run once over the rows of several appends, it does what it does run over each append's rows
 *   one after another (a plain INSERT of the rows, say; not an upsert that could meet one row twice);
 * - what it reads and writes for one append's events no statement of another append reads or
 *   writes in that transaction (rows keyed by the event, say).
 * Only statements of this kind are ever merged, and only in a batch whose inline statements are
 * all of this kind: then moving one past another append's statement changes nothing.
 */
export function independentRowsStatement(
  name: string,
  text: string,
  rows: readonly unknown[],
): pg.QueryConfig {
  const statement: IndependentRowsStatement = {
    name,
    text,
    values: [JSON.stringify(rows)],
    [independentRows]: rows,
  };
  return statement;
}

const rowsOf = (query: pg.QueryConfig): readonly unknown[] | undefined =>
  (query as Partial<IndependentRowsStatement>)[independentRows];

/**
 * The inline statements of a batch's appends (each append's in its order), merged where every
 * one of them is an independentRowsStatement: the appends whose statements have the same names in
 * the same order send each of those once, over all their rows in batch order; such groups follow
 * one another in the order they first come. Each append's statements keep their own order. Any
 * other statement in the batch: all of them as they are, one append after another.
 */
export function mergedInlineStatements(perAppend: readonly (readonly pg.QueryConfig[])[]): pg.QueryConfig[] {
  const all = perAppend.flat();
  if (!all.every((query) => rowsOf(query) !== undefined)) return all;
  const groups = new Map<string, (readonly pg.QueryConfig[])[]>();
  for (const statements of perAppend) {
    if (statements.length === 0) continue;
    const shape = JSON.stringify(statements.map((query) => [query.name, query.text]));
    const group = groups.get(shape);
    if (group) group.push(statements);
    else groups.set(shape, [statements]);
  }
  return [...groups.values()].flatMap((group) =>
    group[0]!.map((first, index) =>
      independentRowsStatement(
        first.name!,
        first.text,
        group.flatMap((statements) => rowsOf(statements[index]!)!),
      ),
    ),
  );
}
