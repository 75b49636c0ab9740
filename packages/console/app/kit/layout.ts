// The two regions of the console's document (served by ../../src/index.ts) and how a page is
// drawn into the main one.
import { h, type Child } from './dom.ts';

export const mainRegion = document.getElementById('main')!;
export const navRegion = document.getElementById('nav')!;

/** Replaces the main region with a page: its title as heading, then its parts. */
export function page(title: string, ...children: Child[]): void {
  document.title = `${title} · Tokenvault console`;
  mainRegion.replaceChildren(
    h('h1', {}, title),
    ...children.filter((child): child is Node | string => !!child),
  );
  mainRegion.focus();
}
