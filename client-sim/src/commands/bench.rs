//! `banter-sim bench`: argument parsing and formatting over [`banter_sim::bench`].
//!
//! Three modes: the throughput comparison against the echo endpoint (default),
//! `--open-loop --rates ...` (latency at fixed offered rates) and `--sessions N` (scale).

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use banter_sim::bench::{
    Baseline, OpenLoopOptions, ScaleOptions, Target, ThroughputOptions, open_loop, scale,
    throughput,
};
use banter_sim::http::Endpoint;
use banter_sim::load::fresh_run_id;
use banter_sim::report::print;
use clap::Args as ClapArgs;

/// Arguments of `banter-sim bench`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The server: http://HOST:PORT (or ws://HOST:PORT, or HOST:PORT). Serve it with
    /// `--bench-echo` and a rate limit that does not throttle (see BENCHMARKS.md).
    #[arg(long, env = "BANTER_URL", default_value = super::DEFAULT_URL)]
    pub url: String,
    /// Connections (each its own player) for the throughput and open-loop modes.
    #[arg(long, default_value_t = 32)]
    pub connections: usize,
    /// Requests each connection keeps in flight (throughput mode).
    #[arg(long, default_value_t = 8)]
    pub depth: usize,
    /// Seconds per phase (throughput) or per rate (open loop).
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Echo-then-step rounds (throughput mode).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Latency at fixed offered rates instead of throughput.
    #[arg(long)]
    pub open_loop: bool,
    /// Offered rates for `--open-loop`, messages per second over all connections.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1000,2000,5000,10000,20000,50000"
    )]
    pub rates: Vec<u64>,
    /// The knee: the first rate whose p99 is over this many times the lowest rate's p99.
    #[arg(long, default_value_t = 10.0)]
    pub knee_factor: f64,
    /// Scale mode: hold this many sessions open.
    #[arg(long)]
    pub sessions: Option<usize>,
    /// Scale mode: each session sends one `set_afk` every this many seconds.
    #[arg(long, default_value_t = 3.0)]
    pub interval_secs: f64,
    /// Scale mode: how long to hold every session open after the last connected, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub hold_secs: f64,
    /// Scale mode: connections being opened at once.
    #[arg(long, default_value_t = 128)]
    pub parallel_connects: usize,
    /// Mint tokens with this secret (the server's `--auth-secret`) instead of a device login
    /// per player; scale mode uses the development secret when it is not given.
    #[arg(long, env = "BANTER_AUTH_SECRET", hide_env_values = true)]
    pub auth_secret: Option<String>,
    /// Spread connections over this many loopback source addresses (127.0.0.1 ...), against
    /// ephemeral-port exhaustion.
    #[arg(long, default_value_t = 1)]
    pub source_ips: usize,
    /// The server's process id: its CPU time per message and its RSS per session.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Throughput mode: also drive bare tokio-tungstenite's echo (`banter-sim tungstenite-echo`)
    /// at HOST:PORT in every round, with the echo's messages, to measure the echo against the
    /// library in the same run.
    #[arg(long)]
    pub baseline_url: Option<String>,
    /// That echo's process id: its CPU time per message.
    #[arg(long, requires = "baseline_url")]
    pub baseline_pid: Option<u32>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn target(args: &Args, auth_secret: Option<String>, read_buffer: usize) -> Result<Target> {
    Ok(Target {
        endpoint: Endpoint::parse(&args.url)?,
        auth_secret,
        source_ips: args.source_ips.clamp(1, 250),
        read_buffer,
        run_id: fresh_run_id(),
    })
}

/// Runs the benchmark; `Ok(false)` when anything failed (the figures are printed either way).
pub fn run(args: &Args) -> Result<bool> {
    ensure!(
        args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 3600.0,
        "--seconds must be in (0, 3600], got {}",
        args.seconds
    );
    if let Some(sessions) = args.sessions {
        ensure!(
            (1..=1_000_000).contains(&sessions),
            "--sessions must be 1..=1000000, got {sessions}"
        );
        ensure!(
            args.interval_secs.is_finite() && args.interval_secs > 0.0,
            "--interval-secs must be positive"
        );
        ensure!(
            args.hold_secs.is_finite() && args.hold_secs >= 0.0,
            "--hold-secs must not be negative"
        );
        let secret = args
            .auth_secret
            .clone()
            .unwrap_or_else(|| banter_sim::auth::DEV_SECRET.to_owned());
        let options = ScaleOptions {
            target: target(args, Some(secret), 4096)?,
            sessions,
            interval: Duration::from_secs_f64(args.interval_secs),
            hold: Duration::from_secs_f64(args.hold_secs),
            parallel_connects: args.parallel_connects,
            server_pid: args.server_pid,
        };
        let report = super::runtime()?
            .block_on(scale(options, !args.json))
            .context("the scale test")?;
        print(args.json, &report, || report.table())?;
        return Ok(report.clean());
    }
    ensure!(
        (1..=10_000).contains(&args.connections),
        "--connections must be 1..=10000, got {}",
        args.connections
    );
    let target = target(args, args.auth_secret.clone(), 16 * 1024)?;
    if args.open_loop {
        ensure!(
            !args.rates.is_empty() && !args.rates.contains(&0),
            "--rates must be positive"
        );
        let options = OpenLoopOptions {
            target,
            connections: args.connections,
            rates: args.rates.clone(),
            seconds: args.seconds,
            knee_factor: args.knee_factor,
        };
        let report = super::runtime()?
            .block_on(open_loop(options))
            .context("the open-loop test")?;
        print(args.json, &report, || report.table())?;
        return Ok(report.rates.iter().all(|p| p.errors == 0));
    }
    // The server answers an action with an effect and an ack: two queued messages per request,
    // and the outgoing queue holds 128.
    ensure!(
        (1..=60).contains(&args.depth),
        "--depth must be 1..=60, got {}",
        args.depth
    );
    ensure!(args.rounds >= 1, "--rounds must be at least 1");
    let baseline = match &args.baseline_url {
        Some(url) => Some(Baseline {
            target: Target {
                endpoint: Endpoint::parse(url).context("--baseline-url")?,
                ..target.clone()
            },
            pid: args.baseline_pid,
        }),
        None => None,
    };
    let options = ThroughputOptions {
        target,
        connections: args.connections,
        depth: args.depth,
        seconds: args.seconds,
        rounds: args.rounds,
        server_pid: args.server_pid,
        baseline,
    };
    let report = super::runtime()?
        .block_on(throughput(options))
        .context("the throughput test")?;
    print(args.json, &report, || report.table())?;
    Ok(report.errors == 0)
}
