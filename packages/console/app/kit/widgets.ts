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
  // A table wider than the page scrolls in its box, which the keyboard must reach to scroll it.
  return h(
    'div',
    {
      class: 'table',
      tabindex: '0',
      role: 'region',
      'aria-label': `Table: ${headings.filter(Boolean).join(', ')}`,
    },
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

/**
 * A secret shown once (a new API key): the text in `#id` and a button that copies it, for the
 * member to put where it is used; the console never shows it again.
 */
export function shownOnce(caption: string, secret: string, id: string): HTMLElement {
  const copied = h('span', { role: 'status' });
  return h(
    'div',
    { class: 'notice' },
    h('p', {}, `${caption} Copy it now: it is shown only once.`),
    h('output', { class: 'secret', id }, secret),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => {
            navigator.clipboard.writeText(secret).then(
              () => (copied.textContent = 'Copied.'),
              () => (copied.textContent = 'The browser refused to copy: select the key and copy it.'),
            );
          },
        },
        'Copy the key',
      ),
      copied,
    ),
  );
}

/** An e-mail address, kept on one line (it would break at its hyphens). */
export function email(address: string | undefined): HTMLElement {
  return h('span', { class: 'email' }, address ?? '');
}
