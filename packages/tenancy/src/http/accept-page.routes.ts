import { createHash } from 'node:crypto';

// The page an invitation e-mail links to. It holds no data of its own: the script reads the token
// from the address's fragment (never sent to a server) and posts it, with the names typed in, to POST /tenants/invitations/accept.
const script = `
const form = document.querySelector('form');
const result = document.querySelector('#result');
const token = new URLSearchParams(location.hash.slice(1)).get('token');
if (!token) { result.textContent = 'This link has no invitation token.'; form.hidden = true; }
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const body = { token };
  for (const name of ['first_name', 'last_name']) {
    const value = form.elements[name].value.trim();
    if (value) body[name] = value;
  }
  form.querySelector('button').disabled = true;
  const response = await fetch(location.pathname, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  form.hidden = response.ok;
  form.querySelector('button').disabled = false;
  result.textContent = response.ok
    ? 'Welcome: you are now a member of the tenant.'
    : (answer.detail || 'The invitation could not be accepted.');
});
`;

const scriptHash = createHash('sha256').update(script).digest('base64');

export const acceptPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Accept your invitation</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}
label{display:block;margin:.75rem 0}input{width:100%;padding:.4rem}button{margin-top:1rem;padding:.5rem 1rem}</style>
</head>
<body>
<h1>Accept your invitation</h1>
<form>
<label>First name (optional) <input name="first_name" maxlength="100" autocomplete="given-name"></label>
<label>Last name (optional) <input name="last_name" maxlength="100" autocomplete="family-name"></label>
<button type="submit">Accept</button>
</form>
<p id="result" role="status"></p>
<script>${script}</script>
</body>
</html>
`;

/** Only the page's own script runs; the token in the address is never sent on as a referrer. */
export const acceptPageHeaders: Record<string, string> = {
  'content-security-policy': `default-src 'none'; script-src 'sha256-${scriptHash}'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};
