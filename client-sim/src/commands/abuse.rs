//! `banter-sim abuse`: argument parsing and formatting over [`banter_sim::abuse::run`].

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use banter_sim::abuse::{AbuseOptions, NoReadRequest, run as run_abuse};
use banter_sim::auth::DEV_SECRET;
use banter_sim::http::Endpoint;
use clap::Args as ClapArgs;

/// Arguments of `banter-sim abuse`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The server: http://HOST:PORT (or ws://HOST:PORT, or HOST:PORT).
    #[arg(long, env = "BANTER_URL", default_value = super::DEFAULT_URL)]
    pub url: String,
    /// How long every abuser runs, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// No progress bar on stderr (it is drawn only when stderr is a terminal anyway).
    #[arg(long)]
    pub quiet: bool,
    /// The server's token secret (`--auth-secret`) [default: the development secret].
    #[arg(long, env = "BANTER_AUTH_SECRET", hide_env_values = true)]
    pub auth_secret: Option<String>,
    /// Spread connections over this many loopback source addresses (127.0.0.1 ...).
    #[arg(long, default_value_t = 8)]
    pub source_ips: usize,
    /// Slowloris: connections that never finish their upgrade request.
    #[arg(long, default_value_t = 500)]
    pub slowloris: usize,
    /// Slowloris: seconds between two header lines.
    #[arg(long, default_value_t = 3.0)]
    pub slowloris_interval: f64,
    /// Never-reading sessions (players `abuse-noread-<i>`), each reconnecting when dropped.
    #[arg(long, default_value_t = 200)]
    pub noread: usize,
    /// Never-reading: requests per second per session (the server allows 20). Just under the
    /// limit, so the server's buffers fill as fast as a client may make them.
    #[arg(long, default_value_t = 18.0)]
    pub noread_rate: f64,
    /// Never-reading: what they ask for.
    #[arg(long, value_enum, default_value_t = NoReadRequest::Fetch)]
    pub noread_request: NoReadRequest,
    /// Never-reading: the conversation `fetch` asks for.
    #[arg(long, default_value = "Bram")]
    pub noread_conversation: String,
    /// Never-reading: the socket's SO_RCVBUF, in bytes (the kernel doubles it and has a floor).
    #[arg(long, default_value_t = 2048)]
    pub noread_rcvbuf: u32,
    /// Churn: upgrades per second, each closed at once.
    #[arg(long, default_value_t = 1000.0)]
    pub churn_rate: f64,
    /// Churn: players the valid tokens are for (`abuse-churn-<i>`).
    #[arg(long, default_value_t = 5000)]
    pub churn_pool: usize,
    /// Churn: the fraction of upgrades with a garbage token.
    #[arg(long, default_value_t = 0.1)]
    pub churn_garbage: f64,
    /// Churn: upgrades in flight at most; a due upgrade beyond it is skipped and counted.
    #[arg(long, default_value_t = 256)]
    pub churn_in_flight: usize,
    /// Malformed: sessions sending bad frames (players `abuse-malformed-<i>`).
    #[arg(long, default_value_t = 50)]
    pub malformed: usize,
    /// Malformed: frames per second per session (the server allows 20).
    #[arg(long, default_value_t = 15.0)]
    pub malformed_rate: f64,
    /// Malformed: every this many frames, one that kills the connection (1 MiB or invalid
    /// UTF-8, alternately); 0 for never.
    #[arg(long, default_value_t = 50)]
    pub malformed_rare_every: u64,
    /// Replay: expired and foreign-secret upgrades per second.
    #[arg(long, default_value_t = 200.0)]
    pub replay_rate: f64,
}

fn check_rate(name: &str, rate: f64) -> Result<()> {
    ensure!(
        rate.is_finite() && (0.0..=1_000_000.0).contains(&rate),
        "--{name} must be in [0, 1000000], got {rate}"
    );
    Ok(())
}

impl Args {
    /// The options, checked.
    pub fn options(&self) -> Result<AbuseOptions> {
        ensure!(
            self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 86_400.0,
            "--seconds must be in (0, 86400], got {}",
            self.seconds
        );
        ensure!(
            self.slowloris_interval.is_finite() && self.slowloris_interval > 0.0,
            "--slowloris-interval must be positive"
        );
        check_rate("noread-rate", self.noread_rate)?;
        check_rate("churn-rate", self.churn_rate)?;
        check_rate("malformed-rate", self.malformed_rate)?;
        check_rate("replay-rate", self.replay_rate)?;
        ensure!(
            (0.0..=1.0).contains(&self.churn_garbage),
            "--churn-garbage must be in [0, 1], got {}",
            self.churn_garbage
        );
        ensure!(
            self.churn_pool > 0 && self.churn_in_flight > 0,
            "--churn-pool and --churn-in-flight must be positive"
        );
        Ok(AbuseOptions {
            endpoint: Endpoint::parse(&self.url)?,
            duration: Duration::from_secs_f64(self.seconds),
            auth_secret: self
                .auth_secret
                .clone()
                .unwrap_or_else(|| DEV_SECRET.to_owned()),
            source_ips: self.source_ips.clamp(1, 250),
            slowloris: self.slowloris,
            slowloris_interval: Duration::from_secs_f64(self.slowloris_interval),
            noread: if self.noread_rate > 0.0 {
                self.noread
            } else {
                0
            },
            noread_rate: self.noread_rate,
            noread_request: self.noread_request,
            noread_conversation: self.noread_conversation.clone(),
            noread_rcvbuf: self.noread_rcvbuf,
            churn_rate: self.churn_rate,
            churn_pool: self.churn_pool,
            churn_garbage: self.churn_garbage,
            churn_in_flight: self.churn_in_flight,
            malformed: if self.malformed_rate > 0.0 {
                self.malformed
            } else {
                0
            },
            malformed_rate: self.malformed_rate,
            malformed_rare_every: self.malformed_rare_every,
            replay_rate: self.replay_rate,
            progress: !self.quiet,
        })
    }
}

/// Runs, prints, and says whether the server held (`Ok(false)`: it did not).
pub fn run(args: &Args) -> Result<bool> {
    let options = args.options()?;
    let report = super::runtime()?
        .block_on(run_abuse(options))
        .context("the abuse run")?;
    banter_sim::report::print(args.json, &report, || report.table())?;
    Ok(report.ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arguments_are_checked() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let parse = |argv: &[&str]| {
            Cli::try_parse_from(std::iter::once("abuse").chain(argv.iter().copied()))
                .expect("parses")
                .args
                .options()
        };
        let o = parse(&["--url", "127.0.0.1:9", "--seconds", "5"]).expect("defaults");
        assert_eq!(o.slowloris, 500);
        assert_eq!(o.noread, 200);
        assert_eq!(o.churn_rate, 1000.0);
        assert_eq!(o.churn_pool, 5000);
        assert_eq!(o.auth_secret, DEV_SECRET);
        assert!(parse(&["--seconds", "0"]).is_err());
        assert!(parse(&["--churn-garbage", "1.5"]).is_err());
        assert!(parse(&["--replay-rate=-1"]).is_err());
        assert_eq!(parse(&["--noread-rate", "0"]).expect("off").noread, 0);
    }
}
