/**
 * Where agentmon's own files are. Every path is taken from the repository root, never from the
 * importing module: the modules also run bundled into dist/agentmon.mjs (see bin/agentmon.js),
 * and `../` from lib/ and from dist/ is the same root.
 */
export const ROOT = new URL("../", import.meta.url);

/** A file or folder of the repository, from its root: `fromRoot("db/sqlite/migrations/")`. */
export const fromRoot = (path: string) => new URL(path, ROOT);
