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

/** Tenant and inviter names are chosen by users: every one of them is escaped in the HTML part. */
export function renderInvitationEmail(content: InvitationMailContent): {
  subject: string;
  text: string;
  html: string;
} {
  const expires = new Date(content.expiresAt).toUTCString();
  const subject = `You are invited to join ${content.tenantName.replace(/[\r\n]+/g, ' ')} on Tokenvault`;
  const text = [
    `${content.inviter} invited you to join ${content.tenantName} on Tokenvault.`,
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
<p>${e(content.inviter)} invited you to join <strong>${e(content.tenantName)}</strong> on Tokenvault.</p>
<p><a href="${e(content.acceptUrl)}">Accept the invitation</a></p>
<p>The invitation expires on ${e(expires)}. If you did not expect it, ignore this e-mail.</p>
</body></html>
`;
  return { subject, text, html };
}
