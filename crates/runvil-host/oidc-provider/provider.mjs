// A real OpenID provider for the gateway's test (src/gateway/gatekeeper/real_provider.rs):
// panva's oidc-provider on a free loopback port, with one client that obtains tokens by client
// credentials, for a resource named with RFC 8707's `resource`, as JWTs signed with a key made
// here (ES256). It prints one line, {"issuer": ...}, then serves until its stdin closes.
//
//   node provider.mjs CLIENT_ID CLIENT_SECRET RESOURCE...
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider, { errors } from 'oidc-provider';

const [clientId, clientSecret, ...resources] = process.argv.slice(2);
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const key = { ...privateKey.export({ format: 'jwk' }), kid: 'ci-1', alg: 'ES256', use: 'sig' };

const server = createServer();
await new Promise((listening) => server.listen(0, '127.0.0.1', listening));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: 'mcp:tools',
    id_token_signed_response_alg: 'ES256',
  }],
  jwks: { keys: [key] },
  scopes: ['mcp:tools'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo(ctx, resource) {
        if (!resources.includes(resource)) {
          throw new errors.InvalidTarget();
        }
        return {
          scope: 'mcp:tools',
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: 'ES256' } },
        };
      },
    },
  },
});
server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
