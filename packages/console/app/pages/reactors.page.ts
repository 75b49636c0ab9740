import { api, type Page } from '../kit/api-client.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { attempt, field, notice, table } from '../kit/widgets.ts';

interface Parameter {
  name: string;
  description?: string;
  type: string;
  optional?: boolean;
}
interface Formula {
  id: string;
  name: string;
  description?: string;
  code: string;
  configuration: Parameter[];
  request_parameters: Parameter[];
}
interface Reactor {
  id: string;
  name: string;
  formula: Formula;
  configuration: Record<string, unknown>;
}

const exampleCode = `module.exports = async function (req) {
  return { raw: req.args };
};`;

/** A JSON text typed by the member, parsed; its mistake names the field it was typed in. */
function parsedJson(label: string, text: string): unknown {
  try {
    return JSON.parse(text.trim() || 'null') as unknown;
  } catch (error) {
    throw new Error(`${label}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const emptyOf: Record<string, unknown> = { string: '', number: 0, boolean: false, object: {}, array: [] };

/**
 * The arguments a formula's request parameters ask for, as a JSON object to fill in: each
 * (dotted names nest) set to an empty value of its type.
 */
export function argumentsTemplate(parameters: Parameter[]): Record<string, unknown> {
  const template: Record<string, unknown> = {};
  for (const parameter of parameters) {
    const segments = parameter.name.split('.');
    let into = template;
    for (const segment of segments.slice(0, -1)) {
      into[segment] ??= {};
      into = into[segment] as Record<string, unknown>;
    }
    into[segments.at(-1)!] = emptyOf[parameter.type] ?? null;
  }
  return template;
}

function parametersTable(parameters: Parameter[]): HTMLElement {
  if (parameters.length === 0)
    return h('p', { class: 'hint' }, 'The formula declares no request parameters.');
  return table(
    ['Parameter', 'Type', 'Required', 'Description'],
    parameters.map((parameter) => [
      h('code', {}, parameter.name),
      parameter.type,
      parameter.optional ? 'No' : 'Yes',
      parameter.description ?? '',
    ]),
  );
}

/** `#/reactors` lists formulas and reactors; `#/reactors/<id>` edits a reactor, `#/reactors/formula-<id>` a formula. */
export async function reactorsRoute(id?: string): Promise<void> {
  if (id?.startsWith('formula-')) await formulaPage(id.slice('formula-'.length));
  else if (id) await reactorPage(id);
  else await reactorsPage();
}

/** The form that creates a formula (no `existing`) or replaces one. */
function formulaForm(status: HTMLElement, existing?: Formula): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: '200', value: existing?.name ?? '' });
  const description = h('input', {
    name: 'description',
    maxlength: '1000',
    value: existing?.description ?? '',
  });
  const code = h(
    'textarea',
    { name: 'code', spellcheck: 'false', required: true },
    existing?.code ?? exampleCode,
  );
  const parameters = h(
    'textarea',
    { name: 'request_parameters', spellcheck: 'false' },
    JSON.stringify(
      existing?.request_parameters ?? [{ name: 'card', type: 'string', optional: false }],
      null,
      2,
    ),
  );
  const configuration = h(
    'textarea',
    { name: 'configuration', spellcheck: 'false' },
    JSON.stringify(existing?.configuration ?? [], null, 2),
  );
  return h(
    'form',
    {
      class: 'stacked',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const body = {
            name: name.value.trim(),
            ...(description.value.trim() ? { description: description.value.trim() } : {}),
            type: 'private',
            code: code.value,
            request_parameters: parsedJson('Request parameters', parameters.value) ?? [],
            configuration: parsedJson('Configuration', configuration.value) ?? [],
          };
          if (existing) {
            await api('PUT', `/reactor-formulas/${existing.id}`, body);
            await formulaPage(existing.id, notice(`Saved the formula “${body.name}”.`));
          } else {
            await api('POST', '/reactor-formulas', body);
            await reactorsPage(notice(`Created the formula “${body.name}”.`));
          }
        });
      },
    },
    field('Formula name', name),
    field('Description', description),
    field('Code', code),
    field('Request parameters (JSON: name, type, optional, description)', parameters),
    field('Configuration declarations (JSON: name, type, description)', configuration),
    h('button', { type: 'submit' }, existing ? 'Save the formula' : 'Create the formula'),
  );
}

/** The form that creates a reactor of a formula (no `existing`) or replaces one's name and configuration. */
function reactorForm(status: HTMLElement, formulas: Formula[], existing?: Reactor): HTMLElement {
  const name = h('input', { name: 'name', required: true, maxlength: '200', value: existing?.name ?? '' });
  const formula = h(
    'select',
    { name: 'formula', disabled: !!existing },
    ...(existing ? [existing.formula] : formulas).map((item) => h('option', { value: item.id }, item.name)),
  );
  const configuration = h(
    'textarea',
    { name: 'configuration', spellcheck: 'false' },
    JSON.stringify(existing?.configuration ?? {}, null, 2),
  );
  return h(
    'form',
    {
      class: 'stacked',
      onsubmit: (event: Event) => {
        event.preventDefault();
        void attempt(status, async () => {
          const body = {
            name: name.value.trim(),
            configuration: parsedJson('Configuration', configuration.value) ?? {},
          };
          if (existing) {
            await api('PUT', `/reactors/${existing.id}`, body);
            await reactorPage(existing.id, notice(`Saved the reactor “${body.name}”.`));
          } else {
            const created = await api<Reactor>('POST', '/reactors', {
              ...body,
              formula: { id: formula.value },
            });
            location.hash = `#/reactors/${created.id}`;
          }
        });
      },
    },
    field('Reactor name', name),
    field('Formula', formula),
    field('Configuration (JSON object)', configuration),
    h('button', { type: 'submit' }, existing ? 'Save the reactor' : 'Create the reactor'),
  );
}

/** The reactor formulas and reactors, and the forms that create them. */
export async function reactorsPage(message?: HTMLElement): Promise<void> {
  const [formulas, reactors] = await Promise.all([
    api<Page<Formula>>('GET', '/reactor-formulas?size=100'),
    api<Page<Reactor>>('GET', '/reactors?size=100'),
  ]);
  const status = h('div', {});
  if (message) status.append(message);
  const rows = reactors.data.map((reactor) => [
    h('a', { href: `#/reactors/${reactor.id}` }, reactor.name),
    reactor.formula.name,
    h('code', {}, reactor.id),
    h('a', { href: `#/reactors/${reactor.id}` }, `Try ${reactor.name}`),
  ]);
  page(
    'Reactors',
    status,
    h('h2', {}, 'Formulas'),
    table(
      ['Name', 'Description', 'Parameters', 'Id'],
      formulas.data.map((formula) => [
        h('a', { href: `#/reactors/formula-${formula.id}` }, formula.name),
        formula.description ?? '',
        formula.request_parameters.map((parameter) => parameter.name).join(', '),
        h('code', {}, formula.id),
      ]),
    ),
    h('h2', {}, 'Reactors'),
    table(['Name', 'Formula', 'Id', ''], rows),
    h('h2', {}, 'New reactor'),
    formulas.data.length > 0
      ? reactorForm(status, formulas.data)
      : h('p', { class: 'hint' }, 'Create a formula first: a reactor runs one.'),
    h('h2', {}, 'New formula'),
    formulaForm(status),
  );
}

async function formulaPage(id: string, message?: HTMLElement): Promise<void> {
  const formula = await api<Formula>('GET', `/reactor-formulas/${encodeURIComponent(id)}`);
  const status = h('div', {});
  if (message) status.append(message);
  page(
    `Formula ${formula.name}`,
    h('p', {}, h('a', { href: '#/reactors' }, 'All reactors')),
    status,
    formulaForm(status, formula),
  );
}

/** A reactor: "Try" (its arguments laid out from the formula's parameters), and its form. */
async function reactorPage(id: string, message?: HTMLElement): Promise<void> {
  const reactor = await api<Reactor>('GET', `/reactors/${encodeURIComponent(id)}`);
  const status = h('div', {});
  if (message) status.append(message);
  const args = h(
    'textarea',
    { name: 'args', spellcheck: 'false' },
    JSON.stringify(argumentsTemplate(reactor.formula.request_parameters), null, 2),
  );
  const output = h('div', { 'aria-live': 'polite' });
  page(
    reactor.name,
    h('p', {}, h('a', { href: '#/reactors' }, 'All reactors')),
    status,
    h('h2', {}, `Try “${reactor.name}”`),
    h(
      'p',
      { class: 'hint' },
      `Its formula “${reactor.formula.name}” takes these arguments; a value may be a token's data, as {{ <token id> }}.`,
    ),
    parametersTable(reactor.formula.request_parameters),
    h(
      'form',
      {
        class: 'stacked',
        onsubmit: (event: Event) => {
          event.preventDefault();
          void attempt(output, async () => {
            const result = await api<unknown>('POST', `/reactors/${reactor.id}/react`, {
              args: parsedJson('Arguments', args.value),
            });
            output.replaceChildren(h('pre', {}, JSON.stringify(result, null, 2)));
          });
        },
      },
      field('Arguments (JSON)', args),
      h('button', { type: 'submit' }, 'Invoke'),
    ),
    output,
    h('h2', {}, 'Settings'),
    reactorForm(status, [], reactor),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: () => {
          if (!confirm(`Delete the reactor “${reactor.name}”?`)) return;
          void attempt(status, async () => {
            await api('DELETE', `/reactors/${reactor.id}`);
            location.hash = '#/reactors';
          });
        },
      },
      `Delete ${reactor.name}`,
    ),
  );
}
