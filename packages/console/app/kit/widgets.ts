// The pieces the pages share: notices, error display, tables, form fields and the pager.
import { h, type Child } from './dom.ts';

export function notice(text: string, kind: 'ok' | 'error' = 'ok'): HTMLElement {
  return h(
    'p',
    { class: kind === 'error' ? 'notice error' : 'notice', role: kind === 'error' ? 'alert' : 'status' },
    text,
  );
}

/** Runs an action; its failure is shown in `where` instead of being lost. */
export async function attempt(where: HTMLElement, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    where.replaceChildren(notice(error instanceof Error ? error.message : String(error), 'error'));
  }
}

export function table(headings: string[], rows: Child[][]): HTMLElement {
  return h(
    'div',
    { class: 'table' },
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, ...headings.map((heading) => h('th', { scope: 'col' }, heading)))),
      h('tbody', {}, ...rows.map((cells) => h('tr', {}, ...cells.map((cell) => h('td', {}, cell))))),
    ),
  );
}

export function field(label: string, control: HTMLElement): HTMLElement {
  return h('label', {}, label, control);
}

/**
 * Previous and Next under a list shown in `results` at page `index` (from 0); `load` draws another
 * page, and its failure is shown in `results`.
 */
export function pager(
  index: number,
  hasNext: boolean,
  results: HTMLElement,
  load: (index: number) => Promise<void>,
): HTMLElement {
  return h(
    'div',
    { class: 'pager' },
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        disabled: index === 0,
        onclick: () => void attempt(results, () => load(index - 1)),
      },
      'Previous',
    ),
    h('span', {}, `Page ${index + 1}`),
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        disabled: !hasNext,
        onclick: () => void attempt(results, () => load(index + 1)),
      },
      'Next',
    ),
  );
}
