# Banter server image: `docker build -t banter-server .`
#
# Stage 1 compiles the release binary; stage 2 is a slim Debian with only the binary and the
# sample content, run as a non-root user. SQLite is compiled into the binary (sqlx bundles it);
# the database migrations are embedded at compile time, so the image needs no migrations folder.

FROM rust:1-bookworm AS builder
WORKDIR /src
# The whole workspace: every member must be present for cargo to resolve it.
COPY . .
RUN cargo build --release --locked -p banter-server

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system banter \
    && useradd --system --gid banter --home-dir /app --no-create-home banter
WORKDIR /app
COPY --from=builder /src/target/release/banter-server /usr/local/bin/banter-server
COPY content/ /app/content/
# ./data is where the default SQLite database goes when DATABASE_URL is not set.
RUN mkdir -p /app/data && chown banter:banter /app/data
USER banter
EXPOSE 7350
ENTRYPOINT ["banter-server"]
CMD ["serve", "--bind", "0.0.0.0:7350"]
