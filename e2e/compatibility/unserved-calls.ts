// Why the service does not serve a call of Basis Theory's Node SDK: one entry per call or group
// of calls, each with a category and one sentence. docs/compatibility.md shows them beside the
// calls, and e2e/compatibility-table.e2e.spec.ts fails when a call is neither served nor listed
// here, or when an entry here names a call that is now served (then delete the entry).

/** The features on the way, each with its calls below (none left: the last one, search and bulk operations, is served). */
export const plannedFeatures: readonly string[] = [];
export type PlannedFeature = string;

/**
 * `covers` is one call, `METHOD /path`, or every call at or under a path, `/path`; path
 * parameters match path parameters whatever their names (`/tokens/{id}` is `/tokens/{tokenId}`).
 */
export type UnservedReason =
  | { covers: string; category: 'planned'; feature: PlannedFeature; why: string }
  | {
      covers: string;
      category: 'not planned';
      why: string;
      /** The service has a route of this method and path, but it does something else (an entry naming one call). */
      routeIsAnotherOperation?: true;
    }
  | { covers: string; category: 'out of scope'; why: string };

export type UnservedCategory = UnservedReason['category'];

/** What the categories mean, as docs/compatibility.md says it. */
export const categoryMeanings: Record<UnservedCategory, string> = {
  planned: 'a feature on the way will serve it (named)',
  'not planned': 'the service does this another way, or not at all (why)',
  'out of scope':
    'it needs contracts with card networks or payment processors, which a self-hosted vault does not have',
};

export const unservedCalls: UnservedReason[] = [
  // Not planned.
  {
    covers: '/documents',
    category: 'not planned',
    why: 'Documents are files, and the service keeps JSON values sealed per token, with no file store.',
  },
  {
    covers: '/keys',
    category: 'not planned',
    why: 'These are keys for encrypting data in the client before it is sent; the service takes data over TLS and encrypts it itself, under a key per token (docs/key-management.md).',
  },
  {
    covers: 'GET /roles',
    category: 'not planned',
    why: 'Members are the owner and admins, who hold the same permissions, so there are no roles to list.',
  },
  {
    covers: 'PUT /tenants/self/members/{id}',
    category: 'not planned',
    why: 'A member’s role does not change: an invitation makes an ADMIN, and OWNER and ADMIN hold the same permissions (docs/decisions.md, Invitations).',
  },
  {
    covers: 'GET /tenants/self/owner',
    category: 'not planned',
    why: 'The owner’s id is in the tenant itself, `owner_id` of `GET /tenants/self`.',
  },
  {
    covers: 'PUT /tenants/self/owner',
    category: 'not planned',
    why: 'The owner is named when the tenant is created (`npm run bootstrap`), and holds what an admin holds, so a transfer would change nothing a member may do.',
  },
  {
    covers: '/tenants/self/connections',
    category: 'not planned',
    why: 'Tenant connections are single sign-on through an identity provider; members sign in with a link sent by e-mail (docs/decisions.md, Members’ sessions).',
  },
  {
    covers: '/tenants/self/security-contact',
    category: 'not planned',
    why: 'It is the address a hosted vault’s vendor writes to about security matters; a self-hosted service has its operator instead.',
  },
  {
    covers: '/application-templates',
    category: 'not planned',
    why: 'Templates are the preset applications of Basis Theory’s portal; here an application is created with its permissions and rules directly (API or console).',
  },
  {
    covers: 'POST /sessions',
    category: 'not planned',
    routeIsAnotherOperation: true,
    why: 'Here `POST /sessions` signs a member in with an e-mail link (docs/decisions.md, Members’ sessions); Basis Theory’s makes a short-lived key for its browser Elements, which this service does not have.',
  },
  {
    covers: 'POST /sessions/authorize',
    category: 'not planned',
    why: 'It grants a Basis Theory Elements session its permissions; without Elements, browser pages call the API with a public key (docs/api-contract.md, CORS).',
  },
  // Out of scope: card-network or payment-processor contracts.
  {
    covers: '/account-updater',
    category: 'out of scope',
    why: 'Account updater asks the card networks for cards’ new numbers and expiry dates.',
  },
  {
    covers: '/agentic',
    category: 'out of scope',
    why: 'Agentic payments enroll cards in the card networks’ programs for AI agents and issue their credentials.',
  },
  {
    covers: '/apple-pay',
    category: 'out of scope',
    why: 'Apple Pay needs a merchant registered with Apple, whose keys open its payment tokens.',
  },
  {
    covers: '/google-pay',
    category: 'out of scope',
    why: 'Google Pay needs a merchant registered with Google, whose keys open its payment tokens.',
  },
  {
    covers: '/network-tokens',
    category: 'out of scope',
    why: 'Network tokens and their cryptograms are issued by the card networks’ token services.',
  },
  {
    covers: '/3ds',
    category: 'out of scope',
    why: '3-D Secure authentication runs through a 3DS server the card networks certify.',
  },
  {
    covers: 'GET /enrichments/card-details',
    category: 'out of scope',
    why: 'Card details (issuer, brand, funding) come from the card networks’ BIN tables.',
  },
  {
    covers: 'POST /enrichments/bank-account-verify',
    category: 'out of scope',
    why: 'Verifying a bank account takes a bank-data provider.',
  },
  {
    covers: '/tenants/{tenantId}/merchants',
    category: 'out of scope',
    why: 'Merchants are Basis Theory’s onboarding of a tenant with card networks and processors.',
  },
];
