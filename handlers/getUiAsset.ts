import { notFound } from "../domain/errors.ts";
import { ASSETS, PAGE_ASSETS, sendUiFile, uiFiles } from "../ui/assets.ts";
import type { Deps, Handler } from "./types.ts";

const served: ReadonlySet<string> = new Set([...ASSETS, ...PAGE_ASSETS]);

/** A script, style sheet or icon of the web UI, by name from a fixed list (never by path). */
export const getUiAsset = (_deps: Deps): Handler<"getUiAsset"> => {
  return async (req, reply) => {
    const { asset } = req.params as { asset: string };
    const file = served.has(asset) ? uiFiles().get(asset) : undefined;
    // The name is not echoed: it is whatever the client sent.
    if (!file) throw notFound(`There is no such UI asset; the UI's files are ${ASSETS.join(", ")}`);
    return sendUiFile(req, reply, file);
  };
};
