//! `banter-sim attack`: argument parsing and formatting over [`banter_sim::attack::run`].

use std::path::PathBuf;

use anyhow::Result;

use banter_sim::attack::{AttackOptions, run as run_attack};
use banter_sim::auth::{DEV_SECRET, DEV_SERVICE_KEY};
use banter_sim::http::Endpoint;
use banter_sim::load::fresh_run_id;
use clap::Args as ClapArgs;

/// Arguments of `banter-sim attack`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The server: http://HOST:PORT (or ws://HOST:PORT, or HOST:PORT).
    #[arg(long, env = "BANTER_URL", default_value = super::DEFAULT_URL)]
    pub url: String,
    /// Print one JSON object (the rows and `passed_through`) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The content folder the server serves [default: the workspace's content/].
    #[arg(long)]
    pub content: Option<PathBuf>,
    /// The server's signing secret, to mint an expired but otherwise valid token.
    #[arg(long, env = "BANTER_AUTH_SECRET", default_value = DEV_SECRET, hide_default_value = true)]
    pub auth_secret: String,
    /// The service key (the catalogue checks that player tokens cannot stand in for it).
    #[arg(long, env = "BANTER_SERVICE_KEY", default_value = DEV_SERVICE_KEY, hide_default_value = true)]
    pub service_key: String,
    /// A second instance of the same server on the same database (PostgreSQL; SQLite cannot
    /// share one), for the cheats that need two (a party member talking on another instance
    /// than the party's shared conversation). Without it those rows are skipped.
    #[arg(long, value_name = "URL")]
    pub second_endpoint: Option<String>,
}

/// Runs the catalogue; `Ok(false)` when any cheat was not blocked as expected.
pub fn run(args: &Args) -> Result<bool> {
    let options = AttackOptions {
        endpoint: Endpoint::parse(&args.url)?,
        content: super::content(args.content.as_ref())?,
        auth_secret: args.auth_secret.clone(),
        service_key: args.service_key.clone(),
        run_id: fresh_run_id(),
        second_endpoint: args
            .second_endpoint
            .as_deref()
            .map(Endpoint::parse)
            .transpose()?,
    };
    let report = super::runtime()?.block_on(run_attack(options));
    banter_sim::report::print(args.json, &report, || report.table())?;
    Ok(report.clean())
}
