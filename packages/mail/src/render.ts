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

/** What the e-mail to a disabled webhook's `notify_email` says: never a secret or a delivery's body. */
export interface WebhookDisabledMailContent {
  webhookName: string;
  webhookId: string;
  urlHost: string;
  reason: 'gone' | 'failing';
  /** WEBHOOK_DISABLE_AFTER_FAILURES, for the `failing` reason. */
  failuresInARow: number;
  disabledAt: string;
}

/** The webhook's name and host were given by the tenant: quoted, defanged and escaped like names. */
export function renderWebhookDisabledEmail(content: WebhookDisabledMailContent): {
  subject: string;
  text: string;
  html: string;
} {
  const name = displayName(content.webhookName);
  const host = displayName(content.urlHost);
  const disabledAt = new Date(content.disabledAt).toUTCString();
  const why =
    content.reason === 'gone'
      ? 'Its receiver answered 410 Gone, which asks for no more deliveries.'
      : content.failuresInARow === 1
        ? 'Its last delivery failed every attempt.'
        : `Its last ${content.failuresInARow} deliveries in a row failed every attempt.`;
  const subject = `Webhook “${name}” was disabled on Tokenvault`;
  const enable = `PUT /webhooks/${content.webhookId} with "status": "enabled"`;
  const text = [
    `The webhook “${name}” (id ${content.webhookId}, receiver host “${host}”) was disabled on ${disabledAt}.`,
    '(The name and host in quotes were given by the tenant, not by Tokenvault.)',
    '',
    why,
    'Nothing is delivered to it while it is disabled, and the events of that time are not sent later.',
    '',
    `To turn it on again once the receiver works, call ${enable} (the whole webhook in the body, as for any update).`,
    '',
  ].join('\n');
  const e = escapeHtml;
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<p>The webhook “<strong>${e(name)}</strong>” (id ${e(content.webhookId)}, receiver host “${e(host)}”) was disabled on ${e(disabledAt)}.</p>
<p><small>(The name and host in quotes were given by the tenant, not by Tokenvault.)</small></p>
<p>${e(why)} Nothing is delivered to it while it is disabled, and the events of that time are not sent later.</p>
<p>To turn it on again once the receiver works, call <code>${e(enable)}</code> (the whole webhook in the body, as for any update).</p>
</body></html>
`;
  return { subject, text, html };
}
