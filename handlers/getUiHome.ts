import { sendUiFile, type UiFile, uiFiles } from "../ui/assets.ts";
import type { Deps, Handler } from "./types.ts";

/** The web UI's sessions page: static HTML; its script reads the data with the user's API key. */
export const getUiHome = (_deps: Deps): Handler<"getUiHome"> => {
  const page = uiFiles().get("index.html") as UiFile;
  return async (req, reply) => sendUiFile(req, reply, page);
};
