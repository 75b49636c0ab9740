import { describe, expect, it } from 'vitest';
import { displayName, renderInvitationEmail, renderWebhookDisabledEmail } from './render.ts';

describe('invitation e-mail', () => {
  it('has the tenant, the inviter, the expiry and the link in text and HTML, every name escaped', () => {
    const message = renderInvitationEmail({
      tenantName: 'Acme <script>alert(1)</script> & "Co"',
      inviter: "O'Brien <ops>",
      expiresAt: '2026-03-04T00:00:00.000Z',
      acceptUrl: 'https://vault.example/tenants/invitations/accept?token=a.b.1.c&x="y"',
    });
    expect(message.text).toContain(
      "“O'Brien <ops>” invited you to join “Acme <script>alert(1)</script> & 'Co'” on Tokenvault.",
    );
    expect(message.text).toContain('(The names in quotes were given by the tenant, not by Tokenvault.)');
    expect(message.text).toContain('Wed, 04 Mar 2026 00:00:00 GMT');
    expect(message.text).toContain('https://vault.example/tenants/invitations/accept?token=a.b.1.c');
    expect(message.html).not.toMatch(/<script>|<ops>/);
    expect(message.html).toContain('Acme &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;Co&#39;');
    expect(message.html).toContain('O&#39;Brien &lt;ops&gt;');
    expect(message.html).toContain(
      'href="https://vault.example/tenants/invitations/accept?token=a.b.1.c&amp;x=&quot;y&quot;"',
    );
    expect(renderInvitationEmail({ ...content(), tenantName: 'A\r\nBcc: x@y' }).subject).not.toMatch(
      /[\r\n]/,
    );
  });

  it('a name cannot pass for the e-mail’s own text: one quoted line, no links, no direction tricks', () => {
    const forged = 'Acme\r\n\r\nLog in at https://evil.example/login\u2028or www.evil.example\u202e.';
    const message = renderInvitationEmail({ ...content(), tenantName: forged, inviter: 'Support\nTeam' });
    const firstLine = message.text.split('\n')[0]!;
    expect(firstLine).toBe(
      '“Support Team” invited you to join “Acme Log in at https[:]//evil[.]example/login or www[.]evil[.]example .” on Tokenvault.',
    );
    // Only the service's own link is a URL in the text.
    expect(message.text.match(/https?:\/\//g)).toEqual(['https://']);
    expect(message.text).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u2028\u2029]/);
    expect(message.html).not.toContain('evil.example');
  });

  it('displayName replaces control, format and separator characters, quotes, and cuts long names', () => {
    const cases: [string, string][] = [
      ['Acme Inc.', 'Acme Inc.'],
      ['a\u0000b\tc', 'a b c'],
      ['left\u202eright\u2066x\u2069', 'left right x'],
      ['say "hi" “there”', "say 'hi' 'there'"],
      ['mail me: ops@acme.test', 'mail me: ops[@]acme[.]test'],
      ['\r\n', '(no name)'],
      ['x'.repeat(200), `${'x'.repeat(79)}…`],
    ];
    for (const [name, shown] of cases) expect(displayName(name)).toBe(shown);
  });
});

function content() {
  return { tenantName: 't', inviter: 'i', expiresAt: '2026-03-04T00:00:00.000Z', acceptUrl: 'https://x' };
}

describe('disabled-webhook e-mail', () => {
  const webhook = {
    webhookName: 'Orders <b>"feed"</b>',
    webhookId: '6c1f0d0e-0000-4000-8000-000000000001',
    urlHost: 'hooks.evil.example',
    reason: 'failing' as const,
    failuresInARow: 5,
    disabledAt: '2026-03-04T00:00:00.000Z',
  };

  it('names the webhook, its host defanged, why and how to re-enable it, every name escaped', () => {
    const message = renderWebhookDisabledEmail(webhook);
    expect(message.subject).toBe("Webhook “Orders <b>'feed'</b>” was disabled on Tokenvault");
    expect(message.text).toContain(
      `The webhook “Orders <b>'feed'</b>” (id ${webhook.webhookId}, receiver host “hooks[.]evil[.]example”) was disabled on Wed, 04 Mar 2026 00:00:00 GMT.`,
    );
    expect(message.text).toContain('Its last 5 deliveries in a row failed every attempt.');
    expect(message.text).toContain(`PUT /webhooks/${webhook.webhookId} with "status": "enabled"`);
    expect(message.html).not.toContain('<b>');
    expect(message.html).not.toContain('evil.example');
    expect(renderWebhookDisabledEmail({ ...webhook, reason: 'gone' }).text).toContain(
      'Its receiver answered 410 Gone',
    );
  });
});
