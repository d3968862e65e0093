// Stands in for `yaml` inside dist/agentmon.mjs where @fastify/swagger and @fastify/swagger-ui
// (GET /docs, http/docs.ts) require it. Both require it as they are registered, at every start,
// though only GET /docs/yaml uses it: loading it costs a cold start tens of milliseconds of CPU
// (B4). Here it is loaded on first use. Everywhere else `yaml` stays external, as bin/build.js says.
let yaml;
const load = () => {
  yaml ??= require("yaml");
  return yaml;
};
module.exports = {
  parse: (...args) => load().parse(...args),
  stringify: (...args) => load().stringify(...args),
};
