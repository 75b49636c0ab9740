import { createHash } from 'node:crypto';

// The page an invitation e-mail links to. It holds no data of its own: the script reads the token
// from the address's fragment (never sent in an address), asks POST /tenants/invitations/link what
// it invites to (the tenant's name), and posts it, with the names typed in, to POST
// /tenants/invitations/accept.
const script = `
const form = document.querySelector('form');
const result = document.querySelector('#result');
const invited = document.querySelector('#invited');
const signIn = document.querySelector('#sign-in');
const token = new URLSearchParams(location.hash.slice(1)).get('token');
let tenantName = '';
const post = async (path, body) => {
  const response = await fetch(path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { ok: response.ok, answer: await response.json().catch(() => ({})) };
};
const refuse = (text) => { result.textContent = text; form.hidden = true; signIn.hidden = false; };
if (!token) refuse('This link has no invitation token.');
else post('/tenants/invitations/link', { token }).then(({ ok, answer }) => {
  if (!ok) return refuse(answer.detail || 'This invitation link cannot be used.');
  tenantName = answer.tenant_name;
  invited.textContent = 'You are invited to join ' + answer.tenant_name + ' as ' + answer.email + '.';
  form.hidden = false;
});
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const body = { token };
  for (const name of ['first_name', 'last_name']) {
    const value = form.elements[name].value.trim();
    if (value) body[name] = value;
  }
  form.querySelector('button').disabled = true;
  const { ok, answer } = await post(location.pathname, body);
  form.hidden = ok;
  form.querySelector('button').disabled = false;
  signIn.hidden = !ok;
  result.textContent = ok
    ? 'Welcome: you are now a member of ' + tenantName + '.'
    : (answer.detail || 'The invitation could not be accepted.');
});
`;

const scriptHash = createHash('sha256').update(script).digest('base64');

// In the console's style: its stylesheet (served by the console package at this path, under
// style-src 'self') and its header. Whatever comes from the API is put in as text (textContent).
export const acceptPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Accept your invitation · Tokenvault console</title>
<link rel="stylesheet" href="/console/assets/console.css">
</head>
<body>
<header><span class="brand">Tokenvault</span></header>
<main id="main">
<h1>Accept your invitation</h1>
<p id="invited"></p>
<form hidden>
<label>First name (optional) <input name="first_name" maxlength="100" autocomplete="given-name"></label>
<label>Last name (optional) <input name="last_name" maxlength="100" autocomplete="family-name"></label>
<button type="submit">Accept</button>
</form>
<p id="result" role="status"></p>
<p id="sign-in" hidden><a href="/console">Sign in to the console</a></p>
</main>
<script>${script}</script>
</body>
</html>
`;

/** Only the page's own script runs; the token in the address is never sent on as a referrer. */
export const acceptPageHeaders: Record<string, string> = {
  'content-security-policy': `default-src 'none'; script-src 'sha256-${scriptHash}'; style-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};
