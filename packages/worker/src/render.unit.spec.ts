import { describe, expect, it } from 'vitest';
import { renderInvitationEmail } from './render.ts';

describe('invitation e-mail', () => {
  it('has the tenant, the inviter, the expiry and the link in text and HTML, every name escaped', () => {
    const message = renderInvitationEmail({
      tenantName: 'Acme <script>alert(1)</script> & "Co"',
      inviter: "O'Brien <ops>",
      expiresAt: '2026-03-04T00:00:00.000Z',
      acceptUrl: 'https://vault.example/tenants/invitations/accept?token=a.b.1.c&x="y"',
    });
    expect(message.text).toContain(
      'O\'Brien <ops> invited you to join Acme <script>alert(1)</script> & "Co"',
    );
    expect(message.text).toContain('Wed, 04 Mar 2026 00:00:00 GMT');
    expect(message.text).toContain('https://vault.example/tenants/invitations/accept?token=a.b.1.c');
    expect(message.html).not.toMatch(/<script>|<ops>/);
    expect(message.html).toContain('Acme &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;');
    expect(message.html).toContain('O&#39;Brien &lt;ops&gt;');
    expect(message.html).toContain(
      'href="https://vault.example/tenants/invitations/accept?token=a.b.1.c&amp;x=&quot;y&quot;"',
    );
    expect(renderInvitationEmail({ ...content(), tenantName: 'A\r\nBcc: x@y' }).subject).not.toMatch(
      /[\r\n]/,
    );
  });
});

function content() {
  return { tenantName: 't', inviter: 'i', expiresAt: '2026-03-04T00:00:00.000Z', acceptUrl: 'https://x' };
}
