// Stands in for `asn1.js` inside dist/agentmon.mjs where fast-jwt requires it. fast-jwt defines
// three ASN.1 shapes as it is loaded, at every start, though only a PEM key (RSA or EC) is ever
// decoded with them, and agentmon signs and verifies its tokens with HMAC. Loading asn1.js and
// bn.js, 140 KB of code, cost a cold start 10-20 ms (B4). Here they are loaded from
// node_modules, where fast-jwt finds its own, the first time a shape is used; bin/build.js
// then leaves them out of the bundle.
const { createRequire } = require("node:module");
let asn1;
const load = () => {
  asn1 ??= createRequire(require.resolve("fast-jwt"))("asn1.js");
  return asn1;
};
module.exports = {
  define(name, body) {
    let entity;
    const shape = () => {
      entity ??= load().define(name, body);
      return entity;
    };
    return {
      decode: (...args) => shape().decode(...args),
      encode: (...args) => shape().encode(...args),
    };
  },
};
