//! `banter-sim load`: argument parsing and formatting over [`banter_sim::load::run`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};

use banter_sim::auth::DEV_SERVICE_KEY;
use banter_sim::channel::Transport;
use banter_sim::http::Endpoint;
use banter_sim::load::{GameServerLoad, LoadOptions, fresh_run_id, run as run_load};
use banter_sim::pace::ReadingPace;
use banter_sim::party::PartySizes;
use clap::Args as ClapArgs;

/// Arguments of `banter-sim load`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The server: http://HOST:PORT (or ws://HOST:PORT, or HOST:PORT).
    #[arg(long, env = "BANTER_URL", default_value = super::DEFAULT_URL)]
    pub url: String,
    /// Concurrent bots, each a player with its own connection (ignored with --game-servers).
    #[arg(long, default_value_t = 10)]
    pub bots: usize,
    /// Simulated game servers, each with its own credential (scope `gs<N>-<run>-`) and one
    /// channel carrying its players (PROTOCOL.md section 16), instead of a WebSocket per bot.
    #[arg(long)]
    pub game_servers: Option<usize>,
    /// With --game-servers: the bots each game server carries.
    #[arg(long, default_value_t = 50, requires = "game_servers")]
    pub players_per_server: usize,
    /// With --game-servers: `http` (batches with long-poll) or `ws` (one WebSocket each).
    #[arg(long, default_value = "http", requires = "game_servers")]
    pub transport: Transport,
    /// With --game-servers over HTTP: each game server's request budget, per minute (the
    /// batching cadence is one request every 60 s / this).
    #[arg(long, default_value_t = 100.0, requires = "game_servers")]
    pub requests_per_minute: f64,
    /// With --game-servers over HTTP: how long an idle batch waits for an event (`wait_ms`)
    /// [default: one batching interval].
    #[arg(long, requires = "game_servers")]
    pub long_poll_ms: Option<u64>,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Each bot's own message rate limit, messages per second (the server allows 20).
    #[arg(long, default_value_t = 10.0)]
    pub rate: f64,
    /// Do not read lines at typewriter pace: send as fast as the rules allow.
    #[arg(long)]
    pub no_read_pace: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// No progress bar (it is drawn only when stderr is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// The content folder the server serves [default: the workspace's content/].
    #[arg(long)]
    pub content: Option<PathBuf>,
    /// Writes every reward and objective progress the server acknowledged, per player, to this
    /// JSON file (to check them against the database after a fault).
    #[arg(long)]
    pub acknowledged_out: Option<PathBuf>,
    /// The service key, to report catches and finds as the trusted game server.
    #[arg(long, env = "BANTER_SERVICE_KEY", default_value = DEV_SERVICE_KEY, hide_default_value = true)]
    pub service_key: String,
    /// Locales the bots read in, spread over them in turn (`--locale ja,ar,en`); none: the
    /// content's source language.
    #[arg(long, value_delimiter = ',')]
    pub locale: Vec<String>,
    /// Play in parties of MIN..MAX members (or exactly N; 2 to 8): the --bots are split into
    /// parties (sizes MIN, MIN+1, ..., MAX in turn) that form over the protocol, walk together
    /// to the NPC whose conversation is shared (the sample's Wren), ride her ferry voting as a
    /// group, each member paid once, then talk to her again until --duration is over (the ride
    /// and one more talk always finish). Fails unless every member was paid exactly once.
    #[arg(long, value_name = "MIN..MAX", conflicts_with = "game_servers")]
    pub party_size: Option<PartySizes>,
}

/// Runs the load test; `Ok(false)` when any request was refused or failed.
pub fn run(args: &Args) -> Result<bool> {
    ensure!(
        (1..=100_000).contains(&args.bots),
        "--bots must be 1..=100000, got {}",
        args.bots
    );
    if let Some(servers) = args.game_servers {
        ensure!(
            (1..=1_000).contains(&servers),
            "--game-servers must be 1..=1000, got {servers}"
        );
        ensure!(
            (1..=1_000).contains(&args.players_per_server),
            "--players-per-server must be 1..=1000 (a channel's max_players), got {}",
            args.players_per_server
        );
        ensure!(
            args.requests_per_minute.is_finite()
                && (1.0..=60_000.0).contains(&args.requests_per_minute),
            "--requests-per-minute must be in [1, 60000], got {}",
            args.requests_per_minute
        );
        if let Some(wait) = args.long_poll_ms {
            ensure!(
                wait <= banter_protocol::channel::MAX_WAIT_MS,
                "--long-poll-ms must be at most {}, got {wait}",
                banter_protocol::channel::MAX_WAIT_MS
            );
        }
    }
    if let Some(sizes) = &args.party_size {
        sizes.split(args.bots).map_err(anyhow::Error::msg)?;
    }
    ensure!(
        args.duration.is_finite() && args.duration > 0.0 && args.duration <= 86_400.0,
        "--duration must be in (0, 86400], got {}",
        args.duration
    );
    if !(args.rate.is_finite() && args.rate > 0.0) {
        bail!("--rate must be positive, got {}", args.rate);
    }
    if args.rate > 20.0 {
        eprintln!(
            "warning: --rate {} is above the server's default 20 messages/s per connection",
            args.rate
        );
    }
    let options = LoadOptions {
        endpoint: Endpoint::parse(&args.url)?,
        locales: args.locale.clone(),
        bots: args.bots,
        duration: Duration::from_secs_f64(args.duration),
        rate_per_sec: args.rate,
        pace: if args.no_read_pace {
            ReadingPace::INSTANT
        } else {
            ReadingPace::TYPEWRITER
        },
        service_key: args.service_key.clone(),
        content: super::content(args.content.as_ref())?,
        progress: !args.no_progress,
        run_id: fresh_run_id(),
        game_servers: args.game_servers.map(|servers| GameServerLoad {
            servers,
            players_per_server: args.players_per_server,
            transport: args.transport,
            requests_per_minute: args.requests_per_minute,
            long_poll: args.long_poll_ms.map(Duration::from_millis),
        }),
        parties: args.party_size,
    };
    let report = super::runtime()?
        .block_on(run_load(options))
        .context("the load test")?;
    if let Some(path) = &args.acknowledged_out {
        let text = serde_json::to_string_pretty(&report.acknowledged_json())?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    banter_sim::report::print(args.json, &report, || report.table())?;
    Ok(report.clean())
}
