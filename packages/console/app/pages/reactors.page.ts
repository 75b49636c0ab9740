import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, table } from '../kit/widgets.ts';

interface Formula {
  id: string;
  name: string;
  description?: string;
}
interface Reactor {
  id: string;
  name: string;
  formula?: { id: string; name?: string };
}

/** The reactor formulas and reactors, and a form to invoke a reactor with arguments. */
export async function reactorsPage(): Promise<void> {
  const [formulas, reactors] = await Promise.all([
    api<Page<Formula>>('GET', '/reactor-formulas?size=100'),
    api<Page<Reactor>>('GET', '/reactors?size=100'),
  ]);
  const tryIt = h('div', {});
  const rows = reactors.data.map((reactor) => [
    reactor.name,
    reactor.formula?.name ?? reactor.formula?.id ?? '',
    h('code', {}, reactor.id),
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () => {
          const args = h('textarea', { name: 'args', spellcheck: 'false' }, '{}');
          const output = h('div', { 'aria-live': 'polite' });
          tryIt.replaceChildren(
            h('h2', {}, `Try “${reactor.name}”`),
            h(
              'form',
              {
                onsubmit: (event: Event) => {
                  event.preventDefault();
                  void attempt(output, async () => {
                    const result = await api<unknown>('POST', `/reactors/${reactor.id}/react`, {
                      args: JSON.parse(args.value) as unknown,
                    });
                    output.replaceChildren(h('pre', {}, JSON.stringify(result, null, 2)));
                  });
                },
              },
              field('Arguments (JSON)', args),
              h('button', { type: 'submit' }, 'Invoke'),
            ),
            output,
          );
          args.focus();
        },
      },
      `Try ${reactor.name}`,
    ),
  ]);
  page(
    'Reactors',
    h('h2', {}, 'Formulas'),
    table(
      ['Name', 'Description', 'Id'],
      formulas.data.map((formula) => [formula.name, formula.description ?? '', h('code', {}, formula.id)]),
    ),
    h('h2', {}, 'Reactors'),
    table(['Name', 'Formula', 'Id', ''], rows),
    tryIt,
  );
}
