/**
 * The bundle's stand-ins (bin/shims/, bin/build.js) that defer a module nobody may need to its
 * first use (B4, docs/decisions/034-cold-start.md and 041): each must answer as the module does.
 */
import { generateKeyPairSync } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import t from "tap";

const require = createRequire(import.meta.url);

interface Asn1 {
  define(name: string, body: (this: unknown) => void): { decode(data: string, enc: string, options: object): unknown };
}

t.test("fast-jwt's ASN.1 shapes, defined on first use, decode a PEM key as asn1.js does", async (t) => {
  const shim = require("../bin/shims/lazy-asn1.cjs") as Asn1;
  const real = require(require.resolve("asn1.js", { paths: [require.resolve("fast-jwt")] })) as Asn1;
  // fast-jwt's own shape of an EC private key (src/crypto.js).
  const body = function (this: any) {
    this.seq().obj(
      this.key("version").int(),
      this.key("privateKey").octstr(),
      this.key("parameters").explicit(0).optional().choice({ namedCurve: this.objid() }),
    );
  };
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const pem = privateKey.export({ type: "sec1", format: "pem" }).toString();
  const options = { label: "EC PRIVATE KEY" };
  const ours = shim.define("ECPrivateKey", body).decode(pem, "pem", options) as Record<string, unknown>;
  const theirs = real.define("ECPrivateKey", body).decode(pem, "pem", options) as Record<string, unknown>;
  t.same(JSON.parse(JSON.stringify(ours)), JSON.parse(JSON.stringify(theirs)));
  t.same(ours.parameters, { type: "namedCurve", value: [1, 2, 840, 10045, 3, 1, 7] }, "P-256's object id");
  t.throws(() => shim.define("ECPrivateKey", body).decode("not a key", "pem", options), "a bad key fails as before");
});

t.test("the bundle that npm install built holds neither asn1.js nor bn.js", async (t) => {
  const dist = new URL("../dist/", import.meta.url);
  const chunks = readdirSync(dist).filter((name) => name.endsWith(".mjs"));
  t.ok(chunks.length > 1, "built");
  t.ok(
    chunks.some((name) => /\bvar require_verifier\b/.test(readFileSync(new URL(name, dist), "utf8"))),
    "fast-jwt itself is bundled, so the names would show",
  );
  for (const name of chunks) {
    const code = readFileSync(new URL(name, dist), "utf8");
    // esbuild names a bundled CommonJS module's wrapper after its file: require_asn1, require_bn.
    t.notMatch(code, /\brequire_(asn1|bn)\d*\b/, name);
  }
});
