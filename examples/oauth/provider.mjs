// An OAuth 2.0 authorization server for ticketd, built on panva's
// oidc-provider (an OpenID Certified implementation): machine clients get
// JWT access tokens with the client_credentials grant, and the RFC 8707
// resource parameter picks the API the token is for, which becomes its aud.
// docs/oauth.md runs it; cmd/ticketd/oauth_test.go tests ticketd against it.
//
//   TICKETD_RESOURCE=http://127.0.0.1:8080/mcp PORT=4444 node provider.mjs
//
// It prints one line, "issuer <URL>", once it listens. PORT=0 (the default)
// picks a free port. Everything is kept in memory, the signing key included:
// restart ticketd after restarting the provider, as its keys change.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

// ticketd's audience: TICKETD_JWT_AUDIENCE, by default PUBLIC_URL + "/mcp".
const ticketdResource = process.env.TICKETD_RESOURCE ?? 'http://127.0.0.1:8080/mcp';
// Another API of the same provider. Its tokens are well signed by the same
// issuer, and ticketd must refuse them: their aud names the other API.
const otherResource = 'https://reports.example/api';

// Resource servers this provider issues tokens for, and the scopes each knows.
const resources = {
  [ticketdResource]: 'tickets:read tickets:write tickets:admin',
  [otherResource]: 'reports:read',
};

// Which ticketd tenant each client acts for. ticketd reads it from the
// tenant_id claim (TICKETD_JWT_TENANT_CLAIM). "unmapped" has none, so ticketd
// refuses its tokens.
const tenants = { 'support-agent': 'acme' };

const clients = [
  {
    client_id: 'support-agent',
    client_secret: 'support-agent-secret',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: 'tickets:read tickets:write reports:read',
  },
  {
    client_id: 'unmapped',
    client_secret: 'unmapped-secret',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: 'tickets:read tickets:write',
  },
];

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: `es256-${Date.now()}`, alg: 'ES256', use: 'sig' };

const server = createServer();
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients,
    // The one signing key is ES256, so clients default to it too.
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    jwks: { keys: [signingKey] },
    scopes: ['tickets:read', 'tickets:write', 'tickets:admin', 'reports:read'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        getResourceServerInfo(ctx, resourceIndicator) {
          const scope = resources[resourceIndicator];
          if (scope === undefined) {
            throw new Provider.errors.InvalidTarget(`unknown resource ${resourceIndicator}`);
          }
          return {
            scope,
            audience: resourceIndicator,
            accessTokenFormat: 'jwt',
            accessTokenTTL: 3600,
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    extraTokenClaims(ctx, token) {
      const tenant = tenants[token.clientId];
      return tenant === undefined ? undefined : { tenant_id: tenant };
    },
  });
  server.on('request', provider.callback());
  console.log(`issuer ${issuer}`);
});
