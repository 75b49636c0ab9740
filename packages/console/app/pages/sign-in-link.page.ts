import { api } from '../kit/api-client.ts';
import type { Session } from '../kit/console-state.ts';
import { h } from '../kit/dom.ts';
import { page } from '../kit/layout.ts';
import { notice } from '../kit/widgets.ts';
import { signInPage } from './sign-in.page.ts';

/**
 * The page of an e-mailed link (`/sign-in#token=…`). The service takes a link only from the
 * browser that asked for it; where someone is signed in already, the member is asked first (the
 * link could be anyone's, sent to switch them into another account). `openConsole` is the
 * router's start, passed in because the router imports this page.
 */
export async function signInLinkPage(openConsole: () => Promise<void>): Promise<void> {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  // The token leaves the address bar (and the history) before anything else happens.
  history.replaceState(null, '', '/console#/tenant');
  if (!token) return openConsole();
  const current = await api<Session>('GET', '/sessions/self').catch(() => undefined);
  if (!current) return signInWith(token, signInPage, openConsole);
  const email = current.user.email;
  const back = () =>
    h(
      'button',
      { type: 'button', class: 'secondary', onclick: () => void openConsole() },
      `Stay signed in as ${email}`,
    );
  page(
    'Switch account?',
    h(
      'p',
      {},
      `You are signed in as ${email}. This sign-in link signs you in as the user it was sent to instead.`,
    ),
    h('p', {}, 'Use it only if you asked for it yourself, in this browser.'),
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        {
          type: 'button',
          onclick: () =>
            void signInWith(token, (refusal) => page('Sign-in link refused', refusal, back()), openConsole),
        },
        'Use the link',
      ),
      back(),
    ),
  );
}

/** Signs in with a link's token, then opens the console; a refusal is shown by `refused`. */
async function signInWith(
  token: string,
  refused: (message: HTMLElement) => void,
  openConsole: () => Promise<void>,
): Promise<void> {
  try {
    await api('POST', '/sessions', { token });
  } catch (error) {
    refused(notice(error instanceof Error ? error.message : 'The link did not work.', 'error'));
    return;
  }
  await openConsole();
}
