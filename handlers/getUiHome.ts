import { sendUiFile, type UiFile, uiFiles } from "../ui/assets.ts";
import type { Deps, Handler } from "./types.ts";

/**
 * The web UI's overview page: static HTML; its script reads the analytics with the user's API key.
 * Until issue 15 `/` was the sessions list, whose filters and cursor lived in its query string. The
 * overview writes `range` into every address it makes; a query without it is an address of that
 * list, sent on to `/sessions` with the same query, so links shared before show what they showed.
 */
export const getUiHome = (_deps: Deps): Handler<"getUiHome"> => {
  return async (req, reply) => {
    const at = req.url.indexOf("?");
    const query = at === -1 ? "" : req.url.slice(at + 1);
    if (query !== "" && !new URLSearchParams(query).has("range")) return reply.redirect(`/sessions?${query}`, 302);
    return sendUiFile(req, reply, uiFiles().get("overview.html") as UiFile);
  };
};
