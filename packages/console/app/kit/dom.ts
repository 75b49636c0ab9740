// The console's one way to build elements. Every string child is appended as text (a Text node),
// never parsed as markup, so what the API answers cannot become part of the page's code.

export type Child = Node | string | null | undefined | false;
type Attributes = Record<string, string | boolean | EventListener | undefined>;

/** An element with its attributes (`on…` ones are listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children) if (child) element.append(child);
  return element;
}
