/**
 * JWT verification microbenchmark (issue 12 item 7): `npx tsx scripts/bench-jwt.ts`.
 *
 * Times the check every JWT call runs before its body is read (signature, algorithm, claims,
 * lifetime), outside Fastify: 100 k verifications of one token (what a client sending the same
 * token with every call costs: the verified-token cache answers) and of 100 k distinct tokens
 * (every one a cache miss: the full HMAC path). Also 100 k signatures. Each figure is the median
 * of 5 rounds, in µs per operation. No thresholds: the figures are for comparing runs on the same
 * machine.
 */
import { performance } from "node:perf_hooks";
import fastifyJwt from "@fastify/jwt";
import Fastify from "fastify";
import { jwtOptions, jwtVerifier, signJwt } from "../http/jwt.ts";

const N = 100_000;
const SECRET = "bench-secret-bench-secret-bench-secret!";
const NOW = 1_800_000_000;
const claims = (i: number) => ({
  session_id: `0b7c6f4e-5a4e-4b0a-9c1e-${String(i).padStart(12, "0")}`,
  project_id: "7d0c2b1e-3f4a-4c5d-8e6f-0a1b2c3d4e5f",
  key_id: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
  iat: NOW,
});

// The implementation under test, behind the two calls the benchmark makes: @fastify/jwt with
// agentmon's options and checks (http/jwt.ts), as http/auth.ts registers it.
const app = Fastify();
await app.register(fastifyJwt, jwtOptions(SECRET));
const verifier = jwtVerifier(app.jwt);
const sign = (i: number) => signJwt(app.jwt, claims(i));
const verify = (token: string) => verifier(token, NOW);

const ROUNDS = 5;

function time(what: string, run: () => void) {
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now();
    run();
    rounds.push(performance.now() - start);
  }
  const ms = rounds.sort((a, b) => a - b)[ROUNDS >> 1] ?? 0;
  const perOp = ((ms * 1000) / N).toFixed(2).padStart(7);
  console.log(`${what.padEnd(32)} ${perOp} µs/op  ${Math.round(N / (ms / 1000))} op/s (median of ${ROUNDS})`);
}

const one = sign(0);
const distinct = Array.from({ length: N }, (_, i) => sign(i + 1));
for (let i = 0; i < 10_000; i++) verify(one); // warm-up
if (!verify(one) || distinct.some((token, i) => i % 997 === 0 && !verify(token))) throw new Error("a token failed");

time(`sign, ${N} tokens`, () => {
  for (let i = 0; i < N; i++) sign(i);
});
time(`verify one token ${N} times`, () => {
  for (let i = 0; i < N; i++) verify(one);
});
time(`verify ${N} distinct tokens`, () => {
  for (const token of distinct) verify(token);
});
