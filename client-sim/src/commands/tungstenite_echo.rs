//! `banter-sim tungstenite-echo`: bare tokio-tungstenite's echo, the baseline `banter-sim bench
//! --baseline-url` measures the server's `/bench/echo` against (BENCHMARKS.md).

use anyhow::{Context, Result};
use clap::Args as ClapArgs;

/// Arguments of `banter-sim tungstenite-echo`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Where to listen (a loopback address: this is a benchmark's baseline, not a service).
    #[arg(long, default_value = "127.0.0.1:7353")]
    pub bind: std::net::SocketAddr,
}

/// Serves until the process is stopped.
pub fn run(args: &Args) -> Result<bool> {
    super::runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .with_context(|| format!("binding {}", args.bind))?;
        eprintln!(
            "tokio-tungstenite echo on {}",
            listener.local_addr().context("the bound address")?
        );
        banter_sim::bench::serve_tungstenite_echo(listener)
            .await
            .context("accepting connections")?;
        Ok(true)
    })
}
