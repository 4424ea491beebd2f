// The signed Agent Card of caddy-a2a under @a2a-js/sdk 1.x's
// verifyAgentCardSignature. The Go interop suite (signing_test.go) starts a
// Caddy with a signing block and runs this file once per active key, with:
//   A2A_CARD_BASE    the site root (the card is /.well-known/agent-card.json)
//   A2A_JWKS_URL     the JWK Set the signatures' jku must name
//   A2A_SIGNING_KID  the kid of the active key
//   A2A_SIGNING_ALG  its algorithm
//   A2A_AGENT_NAME   the card's name
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { canonicalizeAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';

function env(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set; signing_test.go runs this file`);
  return v;
}

const base = env('A2A_CARD_BASE');
const jwksURL = env('A2A_JWKS_URL');
const kid = env('A2A_SIGNING_KID');
const alg = env('A2A_SIGNING_ALG');
const name = env('A2A_AGENT_NAME');

/**
 * A key provider that fetches the JWK Set at the signature's jku, as a
 * client without a pinned key set would; it records what it was asked.
 */
function jkuKeyProvider() {
  const calls = [];
  const provider = async (kid, jku) => {
    calls.push({ kid, jku });
    if (!jku) throw new Error(`signature for kid ${kid} has no jku`);
    const res = await fetch(jku);
    if (!res.ok) throw new Error(`GET ${jku}: ${res.status}`);
    const set = await res.json();
    const key = set.keys?.find((k) => k.kid === kid);
    if (!key) throw new Error(`no key ${kid} in ${JSON.stringify(set)}`);
    return key;
  };
  return { provider, calls };
}

async function fetchCard() {
  const res = await fetch(new URL('/.well-known/agent-card.json', base));
  assert.equal(res.status, 200);
  return res.json();
}

/** The verifier logs each signature it rejects with console.debug. */
function quietDebug(t) {
  t.mock.method(console, 'debug', () => {});
}

test(`the served card verifies (${alg}, kid ${kid})`, async () => {
  const card = await fetchCard();
  assert.equal(card.name, name);
  for (const sig of card.signatures) {
    const header = JSON.parse(Buffer.from(sig.protected, 'base64url').toString('utf8'));
    assert.deepEqual(header, { alg, typ: 'JOSE', kid, jku: jwksURL });
  }
  // The SDK's payload holds the name as itself (RFC 8785 escapes neither
  // non-ASCII text nor < and >).
  assert.ok(
    canonicalizeAgentCard(card).includes(`"name":${JSON.stringify(name)}`),
    canonicalizeAgentCard(card),
  );

  const { provider, calls } = jkuKeyProvider();
  await verifyAgentCardSignature(provider)(card);
  assert.deepEqual(calls[0], { kid, jku: jwksURL });
});

test('the card a client resolves verifies through getAgentCard', async () => {
  const client = await new ClientFactory().createFromUrl(base);
  const { provider } = jkuKeyProvider();
  const card = await client.getAgentCard(undefined, verifyAgentCardSignature(provider));
  assert.equal(card.name, name);
});

test('a tampered skill name does not verify', async (t) => {
  quietDebug(t);
  const card = await fetchCard();
  const tampered = structuredClone(card);
  tampered.skills[0].name += ' (tampered)';
  const { provider, calls } = jkuKeyProvider();
  await assert.rejects(verifyAgentCardSignature(provider)(tampered), /No valid signatures/);
  assert.equal(calls.length, card.signatures.length, 'every signature should have been tried with its key');
});

test('a tampered name and description do not verify', async (t) => {
  quietDebug(t);
  const card = await fetchCard();
  for (const change of [
    (c) => { c.name = c.name.normalize('NFD'); }, // the same text to a reader, other bytes
    (c) => { c.description += ' '; },
  ]) {
    const tampered = structuredClone(card);
    change(tampered);
    const { provider } = jkuKeyProvider();
    await assert.rejects(verifyAgentCardSignature(provider)(tampered), /No valid signatures/);
  }
});
