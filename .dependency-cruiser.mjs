// The layer gate (issue 12): `npm run -s check:layers`, a line of scripts/check.sh. It fails on an
// import cycle, an import that goes up (or sideways) in the layering below, a handler that imports
// another handler, a db adapter imported from outside the top, a devDependency imported from
// production code, and an import that resolves to no file. Each message names the rule and the
// import (from → to); the rule names say what is allowed.
//
// The layering, top to bottom (paths are from the project root; a folder that does not exist yet
// simply matches nothing):
//   server.ts, cli/         read env/flags, open storage, listen: may import anything.
//   app.ts                  composes the http/ plugins.
//   http/                   Fastify plugins.
//   handlers/<opId>.ts      one per operation; handlers/index.ts lists them.
//   services/               the work behind the handlers.
//   ingest/                 turning what the SDKs send into domain values.
//   domain/                 the records and rules of the API.
//   db/store.ts, db/errors.ts     the storage interface and its typed errors.
//   db/sqlite/, db/postgres/      the adapters: only the top, tests and scripts pick one.
//   db/rows.ts, db/groups.ts, db/migrations.ts, db/analytics.ts   what the adapters share (rows as records, the
//                           group commit's queue and figures, migration files, the analytics SQL); only the adapters,
//                           tests and scripts import them.
//   ui/                     the static UI assets module (ui/*.js are browser scripts).
//   lib/                    leaf utilities (paths, spec loading): import nothing of ours.
//   generated/              generated code: imports nothing of ours.
//   clients/typescript/     the TypeScript client, a package of its own (@agentmon/client): apart from
//                           the layers, it imports only its own files and its packages.
//
// Decisions:
// - Type-only imports count (tsPreCompilationDeps: true), for the layers and for cycles alike: an
//   `import type` still couples the importer to the other layer's shape, and a cycle of types is
//   still a tangle to untie. The one exception is the devDependency rule, which is about what is
//   installed at run time: a type-only import is erased, so it may name a devDependency.
// - generated/ is the bottom: any layer that may import domain/ may import generated/ too (its
//   types are the API's operations). lib/ and ui/ may not.
// - handlers/types.ts and handlers/errors.ts are shared modules of handlers/, not handler files:
//   every handler may import them. Only handlers/index.ts may import a handler file.
// - Each layer rule leaves imports of an adapter to the adapter rules, so one bad import is reported
//   once, by the rule that says most about it.
// - Node's built-ins and packages are left to the devDependency and unresolvable rules.

const TOP = "^(server\\.ts$|cli/)";
const APP = "^app\\.ts$";
const HTTP = "^http/";
const HANDLERS = "^handlers/";
const HANDLER_INDEX = "^handlers/index\\.ts$";
const HANDLER_SHARED = "^handlers/(types|errors)\\.ts$";
const SERVICES = "^services/";
const INGEST = "^ingest/";
const DOMAIN = "^domain/";
const LIB = "^lib/";
const UI = "^ui/";
const DB_STORE = "^db/store\\.ts$";
const DB_CORE = "^db/(store|errors)\\.ts$";
const ADAPTERS = "^db/(sqlite|postgres)/";
const DB_SHARED = "^db/((rows|groups|migrations|analytics|scores)\\.ts|projections/)";
const GENERATED = "^generated/";
const CLIENT = "^clients/typescript/";
// Unanchored: a package may resolve through a symlink to a node_modules outside the root.
const NODE_MODULES = "(^|/)node_modules/";
const PRODUCTION = "^(server\\.ts|app\\.ts)$|^(cli|http|handlers|services|ingest|domain|lib|db|ui)/";

/** A layer rule: files under `from` may import only files of ours under `allowed`. */
function layer(name, from, allowed, comment) {
  return {
    name,
    severity: "error",
    comment,
    from: { path: from },
    to: {
      pathNot: [...allowed, ADAPTERS, NODE_MODULES],
      dependencyTypesNot: ["core"],
      couldNotResolve: false,
    },
  };
}

export default {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "No import cycles anywhere, type-only imports included: a cycle means two modules are one.",
      from: {},
      to: { circular: true },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "Every import resolves to a file or a package.",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "no-dev-deps-in-production",
      severity: "error",
      comment: "Production code runs without devDependencies installed (type-only imports are erased).",
      from: { path: PRODUCTION },
      to: { dependencyTypes: ["npm-dev"], dependencyTypesNot: ["type-only"], pathNot: "(^|/)node_modules/@types/" },
    },
    layer(
      "app-imports-only-http-handlers-services-domain-lib-db-core",
      APP,
      [HTTP, HANDLERS, SERVICES, DOMAIN, LIB, DB_CORE, GENERATED],
      "app.ts composes the plugins: it never imports server.ts or cli/ (the top depends on it, not the reverse).",
    ),
    layer(
      "http-imports-only-handlers-services-domain-lib-db-core-ui",
      HTTP,
      [HTTP, HANDLERS, SERVICES, INGEST, DOMAIN, LIB, DB_CORE, UI, GENERATED],
      "A plugin is wired in by app.ts; it never reaches back up to app.ts, server.ts or cli/.",
    ),
    layer(
      "handlers-import-only-services-domain-lib-db-store-ui",
      HANDLERS,
      [HANDLERS, SERVICES, DOMAIN, LIB, DB_STORE, UI, GENERATED],
      "A handler does one operation with the services below it; never http/, app.ts or the top.",
    ),
    {
      name: "handler-not-to-other-handler",
      severity: "error",
      comment:
        "A handler file never imports another handler file: what two operations share belongs in services/ or " +
        "domain/. Only handlers/index.ts imports handler files; handlers/types.ts and handlers/errors.ts are shared.",
      from: { path: HANDLERS, pathNot: HANDLER_INDEX },
      to: { path: HANDLERS, pathNot: HANDLER_SHARED },
    },
    {
      name: "handlers-import-db-store-types-only",
      severity: "error",
      comment: "Handlers see storage through services; from db/store.ts they may take types, not values.",
      from: { path: HANDLERS },
      to: { path: DB_STORE, dependencyTypesNot: ["type-only"] },
    },
    layer(
      "services-import-only-ingest-domain-lib-db-core",
      SERVICES,
      [SERVICES, INGEST, DOMAIN, LIB, DB_CORE, GENERATED],
      "Services know nothing of HTTP: never handlers/, http/, app.ts or the top.",
    ),
    layer(
      "ingest-imports-only-domain-lib",
      INGEST,
      [INGEST, DOMAIN, LIB, GENERATED],
      "Ingest turns input into domain values; it knows neither storage nor HTTP.",
    ),
    layer(
      "domain-imports-only-domain-lib",
      DOMAIN,
      [DOMAIN, LIB, GENERATED],
      "The domain is pure: no storage, no services, no HTTP.",
    ),
    layer(
      "db-core-imports-only-domain-lib",
      DB_CORE,
      [DB_CORE, DOMAIN, LIB, GENERATED],
      "The storage interface and its errors speak in domain values; they know no adapter and no caller.",
    ),
    layer("ui-imports-only-lib", UI, [UI, LIB], "The UI assets module serves files; it knows nothing else of ours."),
    layer("lib-imports-nothing-of-ours", LIB, [LIB], "lib/ is the leaf: utilities that import nothing of ours."),
    layer("generated-imports-nothing-of-ours", GENERATED, [GENERATED], "Generated code imports nothing of ours."),
    {
      name: "client-imports-only-its-own-files",
      severity: "error",
      comment:
        "The TypeScript client is published on its own: it imports its own files (its generated/api.ts is a copy " +
        "scripts/generate.ts writes) and its packages, never the server's code, not even the root generated/, " +
        "which its package would not carry; and no Node built-in, so that it runs wherever fetch does.",
      from: { path: CLIENT },
      to: { pathNot: [CLIENT, NODE_MODULES], couldNotResolve: false },
    },
    {
      name: "db-adapter-imports-only-db-core-domain-lib",
      severity: "error",
      comment: "An adapter implements db/store.ts with its own files, domain/ and lib/; it knows no caller.",
      from: { path: ADAPTERS },
      to: {
        pathNot: [ADAPTERS, DB_CORE, DB_SHARED, DOMAIN, LIB, GENERATED, NODE_MODULES],
        dependencyTypesNot: ["core"],
        couldNotResolve: false,
      },
    },
    {
      name: "db-adapter-not-to-other-adapter",
      severity: "error",
      comment:
        "One adapter never imports another: sqlite and postgres share only db/store.ts, db/errors.ts and the shared db/*.ts.",
      from: { path: ADAPTERS },
      to: { path: ADAPTERS, pathNot: "^db/$1/" },
    },
    {
      name: "db-adapter-only-from-top-test-scripts",
      severity: "error",
      comment: "Only server.ts, cli/, test/ and scripts/ choose an adapter; everything else sees db/store.ts.",
      from: { pathNot: [TOP, "^test/", "^scripts/", ADAPTERS] },
      to: { path: ADAPTERS },
    },
  ],
  options: {
    // Everything of ours under the root, so a new folder is cruised without editing this file.
    // clients/typescript/dist is the client's build output (npm pack makes it), not a source.
    exclude: {
      path: "^(node_modules|dist|clients/typescript/dist|coverage|data|docs|prices|\\.tap|\\.git|test/fixtures)(/|$)",
    },
    doNotFollow: { path: NODE_MODULES },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // Resolve packages by their "exports" as Node does (e.g. tsx/esm/api).
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
    },
  },
};
