/** What an invitation e-mail says. */
export interface InvitationMailContent {
  tenantName: string;
  inviter: string;
  expiresAt: string;
  acceptUrl: string;
}

const htmlEscapes: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => htmlEscapes[character]!);
}

const maxNameLength = 80;

/**
 * Tenant and application names are chosen by the tenant and reach outsiders: rendered so they
 * cannot pass for the e-mail's own text, whatever an old event holds. Control, format (bidi
 * overrides among them) and line-separator characters become spaces, double quotes become single
 * ones (the name is shown between quotes), URLs and domains are defanged (`example[.]com`,
 * `https[:]//`) so mail clients do not link them, and long names are cut.
 */
export function displayName(name: string): string {
  const plain = [
    ...name
      .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu, ' ')
      .replace(/["“”„«»]/g, "'")
      .replace(/\s+/g, ' ')
      .trim(),
  ];
  const cut =
    plain.length > maxNameLength ? `${plain.slice(0, maxNameLength - 1).join('')}…` : plain.join('');
  const shown = cut
    .replace(/:\/\//g, '[:]//')
    .replace(/(?<=[\p{L}\p{N}])\.(?=[\p{L}\p{N}])/gu, '[.]')
    .replace(/@/g, '[@]');
  return shown || '(no name)';
}

/** Names are quoted, stated to be the tenant's, and escaped in the HTML part. */
export function renderInvitationEmail(content: InvitationMailContent): {
  subject: string;
  text: string;
  html: string;
} {
  const expires = new Date(content.expiresAt).toUTCString();
  const tenant = displayName(content.tenantName);
  const inviter = displayName(content.inviter);
  const subject = `Invitation to join “${tenant}” on Tokenvault`;
  const text = [
    `“${inviter}” invited you to join “${tenant}” on Tokenvault.`,
    '(The names in quotes were given by the tenant, not by Tokenvault.)',
    '',
    'To accept, open this link:',
    content.acceptUrl,
    '',
    `The invitation expires on ${expires}. If you did not expect it, ignore this e-mail.`,
    '',
  ].join('\n');
  const e = escapeHtml;
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>“${e(inviter)}” invited you to join “<strong>${e(tenant)}</strong>” on Tokenvault.</p>
<p><small>(The names in quotes were given by the tenant, not by Tokenvault.)</small></p>
<p><a href="${e(content.acceptUrl)}">Accept the invitation</a></p>
<p>The invitation expires on ${e(expires)}. If you did not expect it, ignore this e-mail.</p>
</body></html>
`;
  return { subject, text, html };
}

/** The sign-in e-mail: nothing chosen by a tenant is in it. */
export function renderSignInEmail(content: { signInUrl: string; expiresAt: string }): {
  subject: string;
  text: string;
  html: string;
} {
  const expires = new Date(content.expiresAt).toUTCString();
  const subject = 'Your Tokenvault sign-in link';
  const text = [
    'To sign in to the Tokenvault console, open this link:',
    content.signInUrl,
    '',
    `It works once, until ${expires}. If you did not ask to sign in, ignore this e-mail.`,
    '',
  ].join('\n');
  const e = escapeHtml;
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p><a href="${e(content.signInUrl)}">Sign in to the Tokenvault console</a></p>
<p>It works once, until ${e(expires)}. If you did not ask to sign in, ignore this e-mail.</p>
</body></html>
`;
  return { subject, text, html };
}
