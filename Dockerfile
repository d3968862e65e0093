# agentmon's container image (decision 014): Node 22 on Debian bookworm-slim, production
# dependencies only, the bundle built at image build time, run as the unprivileged user `node`,
# the database on the volume /data.
#
#   docker build -t agentmon .
#   docker run -p 3000:3000 -v agentmon-data:/data agentmon
#
# This file is not built by this repository's CI (no image can be pulled there);
# test/container.test.ts checks it every other way: what it COPYs exists and is not left out by
# .dockerignore, and its RUN steps, its CMD and its HEALTHCHECK work on a clean production install.

FROM node:22-bookworm-slim AS build
# better-sqlite3 is a native addon: compiled from source when no prebuilt binary can be fetched.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The dependencies first, in a layer of their own that a change of the sources does not rebuild.
# The workspace's package.json is in the lockfile, so npm ci needs it.
COPY package.json package-lock.json ./
COPY clients/typescript/package.json clients/typescript/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3
# The sources the bundle is built from, and the files the server reads at run time.
COPY bin/ bin/
COPY cli/ cli/
COPY db/ db/
COPY domain/ domain/
COPY generated/ generated/
COPY handlers/ handlers/
COPY http/ http/
COPY ingest/ ingest/
COPY lib/ lib/
COPY prices/ prices/
COPY services/ services/
COPY ui/ ui/
COPY app.ts server.ts openapi.yaml ./
# dist/agentmon.mjs, dist/store-worker.mjs, their chunks and dist/openapi.json (what `npm install` does in a clone).
RUN node bin/build.js

FROM node:22-bookworm-slim
LABEL org.opencontainers.image.title="agentmon" \
      org.opencontainers.image.description="Self-hosted server for monitoring AI agents" \
      org.opencontainers.image.licenses="MIT"
WORKDIR /app
# Owned by root, so the server cannot change its own code; only /data is the user's.
COPY --from=build /app /app
RUN mkdir -p /data && chown node:node /data \
 && ln -s /app/bin/agentmon.js /usr/local/bin/agentmon
ENV HOST=0.0.0.0 \
    PORT=3000 \
    AGENTMON_DB=/data/agentmon.db
VOLUME /data
EXPOSE 3000
USER node
# Liveness: /healthz answers 200 for as long as the process serves. No curl in the slim image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and gets SIGTERM itself (agentmon finishes the requests in flight and
# exits 0). No V8 flag: `npm start` and the bin pass none (docs/decisions/039-no-v8-flags-at-start.md).
CMD ["node", "bin/agentmon.js", "serve"]
